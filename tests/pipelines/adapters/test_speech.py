"""Decoding a voice upload costs bounded memory: the header's length is checked before any frame is decoded,
and a clip that states none is decoded into a buffer of the limit's size and stopped at its end. Real files,
encoded by PyAV; memory measured with tracemalloc (numpy's buffers are traced)."""

from __future__ import annotations

import io
import struct
import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest
from faster_whisper.audio import decode_audio

from pipelines.adapters.speech import SAMPLE_RATE, AudioError, AudioTooLong, decode
from tests.server.audio import low_bitrate_tone, tone_wav

MB = 1_000_000


def peak_bytes(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
    except (AudioError, AudioTooLong):
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_clip_whose_header_states_too_long_is_refused_before_decoding() -> None:
    ten_minutes = low_bitrate_tone(600, "mp3", "libmp3lame")
    assert len(ten_minutes) < 1 * MB  # well under the 10 MB upload limit: the bytes limit cannot catch it
    with pytest.raises(AudioTooLong, match="declares 600"):
        decode(ten_minutes, 60.0)
    assert peak_bytes(lambda: decode(ten_minutes, 60.0)) < 1 * MB


def test_a_clip_that_states_no_length_stops_at_the_limit_with_bounded_memory() -> None:
    recorded = low_bitrate_tone(600, "webm", "libopus", live=True)  # ten minutes, no duration in its header
    with pytest.raises(AudioTooLong, match="more than 60 s"):
        decode(recorded, 60.0)
    ours = peak_bytes(lambda: decode(recorded, 60.0))
    whole = peak_bytes(lambda: decode_audio(io.BytesIO(recorded), sampling_rate=SAMPLE_RATE))
    # A minute of 16 kHz float32 samples is 3.84 MB; decoding all ten minutes takes ~25 times that.
    assert ours < 6 * MB < 60 * MB < whole, (ours, whole)


def test_samples_are_those_faster_whisper_decodes() -> None:
    clip = tone_wav(2.5)
    ours = decode(clip, 60.0)
    theirs = decode_audio(io.BytesIO(clip), sampling_rate=SAMPLE_RATE)
    assert ours.dtype == np.float32 and ours.size == theirs.size == int(2.5 * SAMPLE_RATE)
    assert np.array_equal(ours, theirs)


def test_malformed_headers_and_truncated_clips_are_clear_errors() -> None:
    clip = tone_wav(1.0)
    for rate in (500_000, 500):  # the wav header's sample rate field
        with pytest.raises(AudioError, match=f"sample rate of {rate} Hz"):
            decode(clip[:24] + struct.pack("<I", rate) + clip[28:], 60.0)
    with pytest.raises(AudioError):
        decode(clip[:44], 60.0)  # a header and no samples
    with pytest.raises(AudioError):
        decode(b"ID3" + b"\0" * 2000, 60.0)
    half = low_bitrate_tone(4, "mp3", "libmp3lame")
    cut = decode(half[: len(half) // 2], 60.0)  # a truncated upload decodes what it holds
    assert 0 < cut.size < 4 * SAMPLE_RATE
