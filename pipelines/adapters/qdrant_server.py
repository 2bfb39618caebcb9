"""Qdrant server adapter (services profile): one collection per index version, an alias names the active one.

Tested against `qdrant-client`'s local mode, its pure-Python stand-in for a server (DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from pipelines.adapters.qdrant_edge import ACCESS, DENSE, SPARSE, UNITS, point_id, point_vectors
from pipelines.documents import Chunk
from pipelines.ports import CallerViews, Hit, Ranked, StoreUnavailable
from pipelines.text.analysis import SparseVector

ACTIVE_ALIAS = "ragline_active"


def connect(url: str) -> QdrantClient:
    if url.startswith(("http://", "https://")):
        return QdrantClient(url=url, timeout=10)
    return QdrantClient(path=url.removeprefix("local:"))  # local mode: tests only


def _filter(
    strategy: str | None, language: str | None = None, visible: list[str] | None = None
) -> models.Filter | None:
    """Strategy and language as given; `visible`: only chunks of one of these access groups (pipelines/access.py)."""
    must: list[models.Condition] = [
        models.FieldCondition(key=key, match=models.MatchValue(value=value))
        for key, value in (("strategy", strategy), ("language", language))
        if value is not None
    ]
    if visible is not None:
        must.append(models.FieldCondition(key=ACCESS, match=models.MatchAny(any=visible)))
    return models.Filter(must=must) if must else None


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=vector.indices, values=vector.values)


class QdrantCollectionWriter:
    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        dimension: int,
        units: bool = False,
        replication_factor: int | None = None,
    ) -> None:
        """`replication_factor`: copies of each shard on a Qdrant cluster (None: the cluster's default)."""
        self.client, self.collection, self.units = client, collection, units
        if client.collection_exists(collection):
            client.delete_collection(collection)
        vectors = {DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)}
        if units:  # a chunk's [own vector, unit vectors...], scored by the best (pipelines/ingestion/dense_units.py)
            max_sim = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
            vectors[UNITS] = models.VectorParams(
                size=dimension, distance=models.Distance.COSINE, multivector_config=max_sim
            )
        client.create_collection(
            collection,
            vectors_config=vectors,
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            replication_factor=replication_factor,
        )
        for field in ("strategy", "language", ACCESS):
            client.create_payload_index(collection, field, models.PayloadSchemaType.KEYWORD)

    def upsert(
        self,
        chunks: Sequence[Chunk],
        dense: np.ndarray,
        sparse: Sequence[SparseVector],
        units: Sequence[np.ndarray] | None = None,
    ) -> None:
        points = [
            models.PointStruct(
                id=point_id(chunk.chunk_id),
                vector=point_vectors(i, dense, _sparse(sparse[i]), units, self.units, len(chunks)),
                payload=chunk.payload(),
            )
            for i, chunk in enumerate(chunks)
        ]
        for start in range(0, len(points), 256):
            self.client.upsert(self.collection, points=points[start : start + 256], wait=True)

    def count(self) -> int:
        return self.client.count(self.collection, exact=True).count

    def close(self) -> None:
        """The client is shared; nothing to release."""


class QdrantCollectionIndex(CallerViews):
    """Read side of a collection; `restricted(access)` is one caller's view of it, as `EdgeShardIndex`'s."""

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self.client, self.collection = client, collection
        try:
            exists = client.collection_exists(collection)
        except Exception as exc:
            raise StoreUnavailable(f"qdrant unreachable: {exc}") from exc
        if not exists:
            raise StoreUnavailable(f"collection {collection} is missing")
        vectors = client.get_collection(collection).config.params.vectors
        self.dense_vector = UNITS if isinstance(vectors, dict) and UNITS in vectors else DENSE

    def _dense_query(self, vector: np.ndarray) -> list[float] | list[list[float]]:
        """A multivector field takes its query as a list of vectors: one here, so MaxSim is the best cosine."""
        values = vector.astype(float).tolist()
        return [values] if self.dense_vector == UNITS else values

    def _query(
        self,
        query: list[float] | list[list[float]] | models.SparseVector,
        using: str,
        limit: int,
        strategy: str | None,
        language: str | None = None,
    ) -> list[Hit]:
        points = self._points(query, using, limit, strategy, language, True)
        return [Hit(Chunk.from_payload(p.payload or {}), float(p.score)) for p in points]

    def _points(
        self,
        query: list[float] | list[list[float]] | models.SparseVector,
        using: str,
        limit: int,
        strategy: str | None,
        language: str | None,
        payload: bool | list[str],
    ) -> list[Any]:
        try:
            result = self.client.query_points(
                self.collection,
                query=query,
                using=using,
                limit=limit,
                query_filter=_filter(strategy, language, self.visible),
                with_payload=payload,
            )
        except Exception as exc:
            raise StoreUnavailable(f"vector query failed on {self.collection}: {exc}") from exc
        return list(result.points)

    def _ranked(
        self,
        query: list[float] | list[list[float]] | models.SparseVector,
        using: str,
        limit: int,
        strategy: str | None,
        language: str | None,
    ) -> list[Ranked]:
        points = self._points(query, using, limit, strategy, language, False)  # ids and scores only
        return [Ranked(str(p.id), float(p.score)) for p in points]

    def dense_ranked(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        return self._ranked(self._dense_query(vector), self.dense_vector, limit, strategy, language)

    def sparse_ranked(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        if not vector.indices:
            return []
        return self._ranked(_sparse(vector), SPARSE, limit, strategy, language)

    def dense_search(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._query(self._dense_query(vector), self.dense_vector, limit, strategy, language)

    def sparse_search(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._query(_sparse(vector), SPARSE, limit, strategy, language) if vector.indices else []

    def scroll_chunks(self, strategy: str | None = None, language: str | None = None) -> list[Chunk]:
        """Every chunk's payload (for an in-memory BM25 corpus); read once per index version."""
        chunks: list[Chunk] = []
        offset = None
        try:
            while True:
                records, offset = self.client.scroll(
                    self.collection, scroll_filter=_filter(strategy, language, self.visible), limit=1024, offset=offset
                )
                chunks.extend(Chunk.from_payload(r.payload or {}) for r in records)
                if offset is None:
                    return chunks
        except Exception as exc:
            raise StoreUnavailable(f"scroll failed on {self.collection}: {exc}") from exc

    def chunks_by_key(self, keys: Sequence[str]) -> dict[str, Chunk]:
        if not keys:
            return {}
        try:
            records = self.client.retrieve(self.collection, list(keys), with_payload=True)
        except Exception as exc:
            raise StoreUnavailable(f"retrieve failed on {self.collection}: {exc}") from exc
        found = {str(r.id): Chunk.from_payload(r.payload or {}) for r in records}
        return self.readable(found)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return list(self.chunks_by_key([point_id(c) for c in chunk_ids]).values())

    def count(self) -> int:
        return self.client.count(self.collection, count_filter=_filter(None, None, self.visible), exact=True).count

    def close(self) -> None:
        """The client is shared; nothing to release."""


def point_alias(client: QdrantClient, collection: str) -> None:
    """Swap the active alias to `collection` in one atomic call."""
    client.update_collection_aliases(
        change_aliases_operations=[
            models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=ACTIVE_ALIAS)),
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=collection, alias_name=ACTIVE_ALIAS)
            ),
        ]
    )
