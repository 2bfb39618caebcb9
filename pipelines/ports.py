"""Ports: what the graphs need from the outside world, as Protocols. One adapter module per system."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np

from pipelines.access import Access
from pipelines.documents import Chunk
from pipelines.text.analysis import SparseVector


class BuildCancelled(RuntimeError):
    """An index build stopped because someone asked (`POST /v1/admin/index/builds/{id}/cancel`); the version it
    was writing is marked failed and the active one is untouched."""


class StoreUnavailable(RuntimeError):
    """A store (vectors, registry) cannot be reached or read: callers fail closed with a 503."""


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float


@dataclass(frozen=True)
class Ranked:
    """A search result without its payload: fusion needs ids and scores, and only the few chunks
    kept after fusion are read whole (reading 30 payloads per retriever cost more than the search)."""

    key: str  # the chunk's point id in the store (`documents.chunk_key`)
    score: float


@runtime_checkable
class Embedder(Protocol):
    @property
    def dimension(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def embed_passages(
        self, texts: Sequence[str], batch_size: int = ..., progress: Callable[[int, int], None] | None = ...
    ) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class CallerViews:
    """What a vector-store adapter's `restricted(access)` shares: a shallow copy of the index (the same client or
    shard) whose `visible` groups its queries add to their filter, and whose `access_key` names them."""

    visible: list[str] | None = None  # None: every chunk
    access_key = "*"

    def restricted(self, access: Access) -> Self:
        if access.groups is None:
            return self
        view = copy.copy(self)
        view.visible, view.access_key = sorted(access.groups), access.key
        return view

    def readable(self, found: dict[str, Chunk]) -> dict[str, Chunk]:
        """Chunks read by id, less those of groups this view may not read (a read by id has no top k to filter
        inside, so the payload decides)."""
        if self.visible is None:
            return found
        return {key: chunk for key, chunk in found.items() if set(chunk.access) & set(self.visible)}


@runtime_checkable
class VectorIndex(Protocol):
    """One built index version: dense and BM25 sparse vectors of every chunk, with payload. `restricted(access)`
    is one caller's view: every method of it sees only the chunks of the caller's access groups (filtered in
    the store's query), and `access_key` names that group set (`*`: the whole index)."""

    access_key: str

    def restricted(self, access: Access) -> VectorIndex: ...

    def dense_search(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]: ...

    def sparse_search(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]: ...

    def dense_ranked(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]: ...

    def sparse_ranked(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]: ...

    def scroll_chunks(self, strategy: str | None = None, language: str | None = None) -> list[Chunk]: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def chunks_by_key(self, keys: Sequence[str]) -> dict[str, Chunk]: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class VectorIndexWriter(Protocol):
    def upsert(
        self,
        chunks: Sequence[Chunk],
        dense: np.ndarray,
        sparse: Sequence[SparseVector],
        units: Sequence[np.ndarray] | None = None,
    ) -> None: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class Cache(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any], ttl_seconds: int) -> None: ...
