"""The ingestion stages as plain functions: fetch, clean, chunk, embed, write a shadow index, check.

Dagster's assets (`assets/ingestion.py`) call these in order; tests and benchmarks can too.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pipelines import bm25
from pipelines.chunkers import STRATEGIES, chunk_document
from pipelines.cleaners import clean_document
from pipelines.documents import Chunk, Document
from pipelines.embedders import load_embedder
from pipelines.embedding_cache import EmbeddingCache
from pipelines.language import detect_language
from pipelines.loaders import content_version, load_directory
from pipelines.registry import IndexVersion
from pipelines.settings import Settings

ANALYZER_VERSION = "bm25-analyzer-v1"
Progress = Callable[[int, int], None]


def build_strategies(settings: Settings) -> tuple[str, ...]:
    """The strategies a build indexes: `RAGLINE_BUILD_STRATEGIES`, always including the query-time one."""
    return tuple(dict.fromkeys([settings.chunk_strategy, *settings.build_strategies]))


@dataclass(frozen=True)
class BuildRequest:
    """What one build indexes and how: the source, its filters and the chunk settings."""

    source: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    strategies: tuple[str, ...]
    embedding_model: str
    target_tokens: int
    max_tokens: int
    overlap_tokens: int
    window_sentences: int = 3

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> BuildRequest:
        values: dict[str, Any] = {
            "source": str(Path(settings.source).expanduser().resolve()),
            "include": tuple(settings.include),
            "exclude": tuple(settings.exclude),
            "strategies": build_strategies(settings),
            "embedding_model": settings.embedding_model,
            "target_tokens": settings.chunk_target_tokens,
            "max_tokens": settings.chunk_max_tokens,
            "overlap_tokens": settings.chunk_overlap_tokens,
            "window_sentences": settings.chunk_window_sentences,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        for key in ("include", "exclude", "strategies"):
            values[key] = tuple(values[key])
        unknown = sorted(set(values["strategies"]) - set(STRATEGIES))
        if unknown or not values["strategies"]:
            raise ValueError(f"unknown chunk strategies {unknown or '(none)'}; known: {sorted(STRATEGIES)}")
        values["source"] = str(Path(values["source"]).expanduser().resolve())
        return cls(**values)

    def chunk_settings(self) -> dict[str, Any]:
        return {
            "target_tokens": self.target_tokens,
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "window_sentences": self.window_sentences,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "analyzer": ANALYZER_VERSION,
        }

    def settings_digest(self, fingerprint: str) -> str:
        blob = json.dumps(
            {"fingerprint": fingerprint, "strategies": self.strategies, **self.chunk_settings()}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()


def fetch_documents(request: BuildRequest) -> list[Document]:
    return load_directory(Path(request.source), list(request.include), list(request.exclude))


def clean_documents(documents: list[Document]) -> list[Document]:
    cleaned = []
    for document in documents:
        doc = clean_document(document)
        cleaned.append(replace(doc, language=detect_language(doc.text)))
    return cleaned


def version_of(request: BuildRequest, documents: list[Document]) -> str:
    fingerprint = load_embedder(request.embedding_model).fingerprint.digest
    return content_version(documents, request.settings_digest(fingerprint))


def chunk_documents(documents: list[Document], request: BuildRequest, strategy: str) -> list[Chunk]:
    embedder = load_embedder(request.embedding_model)
    # Packing re-counts the same blocks many times; the count of a text never changes within a build.
    count = lru_cache(maxsize=200_000)(embedder.count_tokens)
    chunks: list[Chunk] = []
    for document in documents:
        chunks.extend(
            chunk_document(
                document,
                strategy,
                count,
                target=request.target_tokens,
                limit=request.max_tokens,
                overlap=request.overlap_tokens,
                sentences=request.window_sentences,
            )
        )
    return chunks


def embedding_text(chunk: Chunk) -> str:
    """What the dense model reads: the page title and heading path give a chunk its context."""
    trail = " > ".join(dict.fromkeys([chunk.title, *chunk.heading_path]))
    return f"{trail}\n\n{chunk.text}" if trail else chunk.text


@dataclass
class Embeddings:
    dense: np.ndarray
    sparse: list[bm25.SparseVector]
    avg_length: float
    reused: int
    computed: int
    seconds: float


def embed_chunks(
    chunks: list[Chunk], request: BuildRequest, cache_path: Path, progress: Progress | None = None
) -> Embeddings:
    started = time.perf_counter()
    embedder = load_embedder(request.embedding_model)
    texts = [embedding_text(c) for c in chunks]
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)
    try:
        cached = cache.lookup(texts)
        missing = [i for i in range(len(texts)) if i not in cached]
        dense = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
        for i, vector in cached.items():
            dense[i] = vector
        if missing:
            fresh = embedder.embed_passages([texts[i] for i in missing], progress=progress)
            dense[missing] = fresh
            cache.store([texts[i] for i in missing], fresh)
    finally:
        cache.close()
    terms = [bm25.analyze(t) for t in texts]
    avg_length = float(np.mean([len(t) for t in terms])) if terms else 0.0
    sparse = [bm25.document_vector(t, avg_length) for t in terms]
    return Embeddings(dense, sparse, avg_length, len(cached), len(missing), time.perf_counter() - started)


def check_chunks(chunks: list[Chunk], max_tokens: int) -> dict[str, Any]:
    """Blocking data checks on chunks; each result says whether it passed and what it found."""
    ids = [c.chunk_id for c in chunks]
    over = [c.chunk_id for c in chunks if c.token_count > max_tokens]
    empty = [c.chunk_id for c in chunks if not c.text.strip()]
    return {
        "chunks_present": {"passed": bool(chunks), "chunks": len(chunks)},
        "chunk_ids_unique": {"passed": len(ids) == len(set(ids)), "duplicates": len(ids) - len(set(ids))},
        "chunks_within_token_limit": {"passed": not over, "over_limit": over[:20], "max_tokens": max_tokens},
        "chunks_not_empty": {"passed": not empty, "empty": empty[:20]},
    }


def check_embeddings(embeddings: Embeddings, dimension: int) -> dict[str, Any]:
    dense = embeddings.dense
    finite = bool(np.isfinite(dense).all())
    norms = np.linalg.norm(dense, axis=1) if len(dense) else np.ones(0)
    return {
        "embeddings_finite": {"passed": finite},
        "embeddings_dimension": {"passed": dense.shape[1] == dimension, "dimension": int(dense.shape[1])},
        "embeddings_normalised": {
            "passed": bool(np.all(np.abs(norms - 1.0) < 1e-3)),
            "min_norm": float(norms.min()) if len(norms) else math.nan,
        },
    }


def new_version_record(
    version: str,
    request: BuildRequest,
    documents: list[Document],
    chunks: list[Chunk],
    location: str,
    avg_length: float,
) -> IndexVersion:
    embedder = load_embedder(request.embedding_model)
    return IndexVersion(
        version=version,
        source=request.source,
        fingerprint=embedder.fingerprint.digest,
        embedding={"name": request.embedding_model, **embedder.fingerprint.as_dict()},
        chunk_settings=request.chunk_settings(),
        strategies=list(request.strategies),
        languages=sorted({d.language for d in documents}),
        location=location,
        document_count=len(documents),
        chunk_count=len(chunks),
        avg_doc_length=avg_length,
    )
