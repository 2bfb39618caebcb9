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


class _Unseekable(io.RawIOBase):
    """A write-only sink a muxer cannot seek back into: as a live recording (a browser's MediaRecorder) is
    written, so the container's header never learns the clip's length."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, chunk) -> int:  # type: ignore[no-untyped-def,override]
        self.data += chunk
        return len(chunk)


def low_bitrate_tone(seconds: float, container: str, codec: str, rate: int = 8000, live: bool = False) -> bytes:
    """A quiet tone at 8 kbit/s: a few kilobytes a minute that decode to 64 KB of samples a second.
    `live`: written without seeking, so the header states no duration (WebM, as browsers record it)."""
    sink: io.BytesIO | _Unseekable = _Unseekable() if live else io.BytesIO()
    with av.open(sink, mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=rate, layout="mono")
        stream.bit_rate = 8000
        step, done = 1024, 0
        while done < seconds * rate:
            wave = (np.sin(0.05 * (np.arange(step) + done)) * 3000).astype(np.int16)
            frame = av.AudioFrame.from_ndarray(wave.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                out.mux(packet)
            done += step
        for packet in stream.encode(None):
            out.mux(packet)
    return bytes(sink.data) if isinstance(sink, _Unseekable) else sink.getvalue()
