"""An on-disk cache of passage vectors keyed by embedding fingerprint and text hash.

A rebuild after one page changed embeds only that page's chunks: everything else is read back. A query reads it
too (`CachedVectors`): texts a build embedded ahead of time (the `sentence_vectors` asset) are not embedded again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import structlog

from pipelines.documents import sha256_text
from pipelines.ports import Embedder

log = structlog.get_logger(__name__)


class EmbeddingCache:
    def __init__(self, path: Path, fingerprint: str, dimension: int, db: sqlite3.Connection | None = None) -> None:
        if db is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30)
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (fingerprint TEXT, text_hash TEXT, vector BLOB, "
                "PRIMARY KEY (fingerprint, text_hash))"
            )
        self._db = db
        self.fingerprint, self.dimension = fingerprint, dimension

    @classmethod
    def reader(cls, path: Path, fingerprint: str, dimension: int, timeout: float = 0.1) -> EmbeddingCache | None:
        """The cache at `path` opened read-only (None when there is none): a reader never creates the file nor
        waits long on a build that is writing it."""
        if not path.exists():
            return None
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout)
        return cls(path, fingerprint, dimension, db)

    def lookup(self, texts: Sequence[str]) -> dict[int, np.ndarray]:
        hashes = [sha256_text(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            part = hashes[start : start + 500]
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM vectors WHERE fingerprint = ? AND text_hash IN ({','.join('?' * len(part))})",
                [self.fingerprint, *part],
            )
            for text_hash, blob in rows:
                found[text_hash] = np.frombuffer(blob, dtype=np.float32)
        return {i: found[h] for i, h in enumerate(hashes) if h in found}

    def store(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (self.fingerprint, sha256_text(t), vectors[i].astype(np.float32).tobytes()) for i, t in enumerate(texts)
        ]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()


class CachedVectors:
    """Passage vectors for a query: those the embedding cache in `path` holds (embedded by a build, ahead of the
    question), the rest embedded now and not stored (a query never writes the build's cache). A missing or busy
    cache costs only time: every text is then embedded, never an error."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        found: dict[int, np.ndarray] = {}
        fingerprint = embedder.fingerprint.digest  # type: ignore[attr-defined]
        try:
            cache = EmbeddingCache.reader(self.path, fingerprint, embedder.dimension)
            if cache is not None:
                try:
                    found = cache.lookup(texts)
                finally:
                    cache.close()
        except sqlite3.Error as exc:
            log.warning("embedding_cache_unreadable", path=str(self.path), error=str(exc))
        out = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
        for i, vector in found.items():
            out[i] = vector
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            out[missing] = embedder.embed_passages([texts[i] for i in missing])
        return out
