"""Real speech for the voice tests: espeak-ng speaks a sentence, PyAV transcodes it."""

from __future__ import annotations

import io
import subprocess

import av
import numpy as np


def spoken(text: str, voice: str = "en-us", speed: int = 150) -> bytes:
    """A wav of `text` spoken by espeak-ng (installed by scripts/system-deps.sh) in one of its voices."""
    command = ["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text]
    done = subprocess.run(command, capture_output=True, check=True)
    return done.stdout


def transcode(wav: bytes, container: str, codec: str) -> bytes:
    """The same audio in another container/codec (ogg/opus, mp3, webm/opus)."""
    source = av.open(io.BytesIO(wav))
    out_buffer = io.BytesIO()
    out = av.open(out_buffer, mode="w", format=container)
    stream = out.add_stream(codec, rate=48000 if "opus" in codec else 22050)
    resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=stream.rate)
    for frame in source.decode(audio=0):
        for resampled in resampler.resample(frame):
            for packet in stream.encode(resampled):
                out.mux(packet)
    for packet in stream.encode(None):
        out.mux(packet)
    out.close()
    return out_buffer.getvalue()


def tone_wav(seconds: float, rate: int = 16000) -> bytes:
    """A sine tone of the given length (for the duration limit; it needs no speech)."""
    samples = (0.2 * np.sin(2 * np.pi * 440 * np.arange(int(seconds * rate)) / rate) * 32767).astype(np.int16)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="wav") as out:
        stream = out.add_stream("pcm_s16le", rate=rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()
