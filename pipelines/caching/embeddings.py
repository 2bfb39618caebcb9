"""An on-disk cache of passage vectors keyed by embedding fingerprint and text hash.

A rebuild after one page changed embeds only that page's chunks: everything else is read back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipelines.documents import sha256_text


class EmbeddingCache:
    def __init__(self, path: Path, fingerprint: str, dimension: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (fingerprint TEXT, text_hash TEXT, vector BLOB, "
            "PRIMARY KEY (fingerprint, text_hash))"
        )
        self.fingerprint, self.dimension = fingerprint, dimension

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
