"""Qdrant Edge adapter (embedded profile): one shard directory per index version.

Qdrant's engine runs in-process; a shard is built once by ingestion and then only read.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from pipelines.documents import Chunk, chunk_key
from pipelines.ports import CallerViews, Hit, Ranked, StoreUnavailable
from pipelines.text.analysis import SparseVector

DENSE, SPARSE = "dense", "bm25"
# A chunk's multivector [own vector, unit vectors...] (pipelines/ingestion/dense_units.py): dense search uses it
# when the shard has it, scoring each chunk by its best vector (MaxSim).
UNITS = "units"
ACCESS = "access"  # the payload field of a chunk's access groups, indexed as keywords


point_id = chunk_key  # the store's point id of a chunk


def point_vectors(
    i: int, dense: np.ndarray, sparse: Any, units: Sequence[np.ndarray] | None, writer_units: bool, count: int
) -> dict[str, Any]:
    """The named vectors of chunk `i`: its dense vector, its sparse vector (already in the store's own type)
    and, for a writer created with multivectors, its units. A writer gets units for every chunk or none."""
    if writer_units != (units is not None) or (units is not None and len(units) != count):
        raise ValueError(
            f"writer expects units={writer_units}, got {None if units is None else len(units)} for {count} chunks"
        )
    vector: dict[str, Any] = {DENSE: dense[i].astype(float).tolist(), SPARSE: sparse}
    if units is not None:
        vector[UNITS] = units[i].astype(float).tolist()
    return vector


def _dense_query(vector: np.ndarray, using: str = DENSE) -> qe.Query:
    return qe.Query.Nearest(vector.astype(float).tolist(), using=using)


def _sparse(vector: SparseVector) -> qe.SparseVector:
    return qe.SparseVector(indices=vector.indices, values=vector.values)


def _sparse_query(vector: SparseVector) -> qe.Query:
    return qe.Query.Nearest(_sparse(vector), using=SPARSE)


def _filter(strategy: str | None, language: str | None = None, visible: list[str] | None = None) -> qe.Filter | None:
    """Strategy and language as given; `visible`: only chunks of one of these access groups (pipelines/access.py)."""
    must: list[Any] = [
        qe.FieldCondition(key=key, match=qe.MatchValue(value))
        for key, value in (("strategy", strategy), ("language", language))
        if value is not None
    ]
    if visible is not None:
        must.append(qe.FieldCondition(key=ACCESS, match=qe.MatchAny(visible)))
    return qe.Filter(must=must) if must else None


class EdgeShardWriter:
    """Creates a new shard; refuses to write into a directory that already holds one."""

    def __init__(self, path: Path, dimension: int, units: bool = False) -> None:
        if path.exists():
            shutil.rmtree(path)  # a half-written shard of a failed build; the version is not active
        path.parent.mkdir(parents=True, exist_ok=True)
        vectors = {DENSE: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)}
        if units:
            max_sim = qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim)
            vectors[UNITS] = qe.EdgeVectorParams(
                size=dimension, distance=qe.Distance.Cosine, multivector_config=max_sim
            )
        self.units = units
        config = qe.EdgeConfig(
            vectors=vectors,
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        self._shard = qe.EdgeShard.create(str(path), config)
        self._shard.update(qe.UpdateOperation.create_field_index("strategy", qe.PayloadSchemaType.Keyword))
        self._shard.update(qe.UpdateOperation.create_field_index("language", qe.PayloadSchemaType.Keyword))
        self._shard.update(qe.UpdateOperation.create_field_index(ACCESS, qe.PayloadSchemaType.Keyword))

    def upsert(
        self,
        chunks: Sequence[Chunk],
        dense: np.ndarray,
        sparse: Sequence[SparseVector],
        units: Sequence[np.ndarray] | None = None,
    ) -> None:
        points = [
            qe.Point(
                id=point_id(chunk.chunk_id),
                vector=point_vectors(i, dense, _sparse(sparse[i]), units, self.units, len(chunks)),
                payload=chunk.payload(),
            )
            for i, chunk in enumerate(chunks)
        ]
        for start in range(0, len(points), 256):
            self._shard.update(qe.UpdateOperation.upsert_points(points[start : start + 256]))

    def count(self) -> int:
        return self._shard.count(qe.CountRequest(exact=True))

    def close(self) -> None:
        self._shard.flush()
        self._shard.optimize()
        self._shard.close()


class EdgeShardIndex(CallerViews):
    """Read side of a built shard. `restricted(access)` is a view of it for one caller: every search, scroll,
    read by id and count of the view sees only the chunks of the caller's access groups, filtered inside the
    engine's query (never after the top k). The view shares the shard; closing the index closes it."""

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise StoreUnavailable(f"shard {path} is missing")
        try:
            self._shard = qe.EdgeShard.load(str(path))
        except Exception as exc:  # the engine raises its own error types
            raise StoreUnavailable(f"shard {path} cannot be opened: {exc}") from exc
        self._lock = threading.Lock()
        self.path = path
        self.dense_vector = UNITS if self._has_vector(UNITS) else DENSE

    def _has_vector(self, name: str) -> bool:
        """Whether the shard stores the named vector (the engine refuses a query on one it lacks)."""
        probe = qe.QueryRequest(limit=1, query=qe.Query.Nearest([0.0], using=name), with_payload=False)
        try:
            with self._lock:
                self._shard.query(probe)
        except Exception as exc:
            message = str(exc).lower()
            if "not existing vector name" in message:
                return False
            if "dimension" in message:  # the vector exists; the probe's size is wrong
                return True
            raise StoreUnavailable(f"shard {self.path} cannot be queried: {exc}") from exc
        return True

    def _points(self, query: qe.Query, limit: int, strategy: str | None, language: str | None, payload: Any) -> Any:
        request = qe.QueryRequest(
            limit=limit, query=query, filter=_filter(strategy, language, self.visible), with_payload=payload
        )
        try:
            with self._lock:
                return self._shard.query(request)
        except Exception as exc:
            raise StoreUnavailable(f"vector query failed on {self.path}: {exc}") from exc

    def _query(self, query: qe.Query, limit: int, strategy: str | None, language: str | None = None) -> list[Hit]:
        points = self._points(query, limit, strategy, language, True)
        return [Hit(Chunk.from_payload(p.payload or {}), float(p.score)) for p in points]

    def _ranked(self, query: qe.Query, limit: int, strategy: str | None, language: str | None) -> list[Ranked]:
        # No payload at all: even one field costs more than the search itself (sparse 0.05 -> 0.5 ms).
        points = self._points(query, limit, strategy, language, False)
        return [Ranked(str(p.id), float(p.score)) for p in points]

    def dense_ranked(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        return self._ranked(_dense_query(vector, self.dense_vector), limit, strategy, language)

    def sparse_ranked(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        return self._ranked(_sparse_query(vector), limit, strategy, language) if vector.indices else []

    def dense_search(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._query(_dense_query(vector, self.dense_vector), limit, strategy, language)

    def sparse_search(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._query(_sparse_query(vector), limit, strategy, language) if vector.indices else []

    def scroll_chunks(self, strategy: str | None = None, language: str | None = None) -> list[Chunk]:
        """Every chunk's payload (for an in-memory BM25 corpus); read once per index version."""
        chunks: list[Chunk] = []
        offset = None
        try:
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=1024, filter=_filter(strategy, language, self.visible), with_payload=True
                )
                with self._lock:
                    records, offset = self._shard.scroll(request)
                chunks.extend(Chunk.from_payload(r.payload or {}) for r in records)
                if offset is None:
                    return chunks
        except Exception as exc:
            raise StoreUnavailable(f"scroll failed on {self.path}: {exc}") from exc

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids that exist (neighbour expansion asks for ids that may not)."""
        return list(self.chunks_by_key([point_id(c) for c in chunk_ids]).values())

    def chunks_by_key(self, keys: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of these point keys (from `dense_ranked` / `sparse_ranked`), by key."""
        if not keys:
            return {}
        try:
            with self._lock:
                records = self._shard.retrieve(list(keys), True, False)
        except Exception as exc:
            raise StoreUnavailable(f"retrieve failed on {self.path}: {exc}") from exc
        found = {str(r.id): Chunk.from_payload(r.payload or {}) for r in records}
        return self.readable(found)

    def count(self) -> int:
        with self._lock:
            return self._shard.count(qe.CountRequest(filter=_filter(None, None, self.visible), exact=True))

    def close(self) -> None:
        with self._lock:  # a request still querying the old version finishes first
            self._shard.close()
