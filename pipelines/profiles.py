"""Profiles: the one place where each outside system is chosen (embedded or services).

`open_stores(settings)` gives everything the graphs need: registry, cache, and the vector-store
operations for an index version, whichever profile is active.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.adapters import pgvector_index
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.adapters.postgres_pool import PostgresPool
from pipelines.adapters.qdrant_edge import EdgeShardIndex, EdgeShardWriter
from pipelines.adapters.redis_cache import RedisCache
from pipelines.adapters.registry import Registry
from pipelines.ports import StoreUnavailable, VectorIndex, VectorIndexWriter
from pipelines.settings import Settings


@dataclass
class Stores:
    settings: Settings
    registry: Registry
    cache: RedisCache
    services: EmbeddedServices | None = None
    postgres_dsn: str | None = None  # the registry's: a `postgres` vector store's tables live beside it
    _qdrant: Any = field(default=None, repr=False)
    _index_pool: PostgresPool | None = field(default=None, repr=False)

    @property
    def uses_qdrant_server(self) -> bool:
        return self.settings.vector_store == "qdrant" and self.settings.qdrant_url is not None

    def read_by_every_process(self, location: str) -> bool:
        """A PostgreSQL table pair or a Qdrant server's collection, rather than a shard one process holds."""
        return pgvector_index.in_postgres(location) or self.uses_qdrant_server

    def serves_from(self, location: str) -> bool:
        """Whether `location` is in the store the settings choose (a version built into another is rebuilt)."""
        return pgvector_index.in_postgres(location) == (self.settings.vector_store == "postgres")

    def index_pool(self) -> PostgresPool:
        if self._index_pool is None:
            if self.postgres_dsn is None:
                raise StoreUnavailable("the PostgreSQL vector store needs the registry's PostgreSQL DSN")
            self._index_pool = pgvector_index.shared_pool(
                self.postgres_dsn,
                self.settings.postgres_schema,
                max_size=self.settings.postgres_pool_max,
                timeout=self.settings.postgres_pool_timeout_seconds,
            )
        return self._index_pool

    def location_for(self, version: str, build: str | None = None) -> str:
        """Where a version's shard (or collection) goes. A forced rebuild of the active version names its
        `build`: it writes a fresh location beside the one servers hold open, and activation switches to it."""
        name = version if build is None else f"{version}_{build}"
        if self.settings.vector_store == "postgres":
            return pgvector_index.location_of(name)
        if self.uses_qdrant_server:
            return f"ragline_{name.replace('-', '_')}"
        return str(self.settings.shards_dir / name)

    def qdrant(self) -> Any:
        if self._qdrant is None:
            from pipelines.adapters.qdrant_server import connect

            assert self.settings.qdrant_url is not None
            self._qdrant = connect(self.settings.qdrant_url)
        return self._qdrant

    def index_writer(self, location: str, dimension: int, units: bool = False) -> VectorIndexWriter:
        """A writer of a new index; `units`: it also stores each chunk's multivector (dense_units.py)."""
        if pgvector_index.in_postgres(location):
            return pgvector_index.PgVectorIndexWriter(
                self.index_pool(), self.settings.postgres_schema, location, dimension, units
            )
        if self.uses_qdrant_server:
            from pipelines.adapters.qdrant_server import QdrantCollectionWriter

            return QdrantCollectionWriter(
                self.qdrant(), location, dimension, units, self.settings.qdrant_replication_factor
            )
        return EdgeShardWriter(Path(location), dimension, units)

    def open_index(self, location: str) -> VectorIndex:
        if pgvector_index.in_postgres(location):
            return pgvector_index.PgVectorIndex(self.index_pool(), self.settings.postgres_schema, location)
        if self.uses_qdrant_server:
            from pipelines.adapters.qdrant_server import QdrantCollectionIndex

            return QdrantCollectionIndex(self.qdrant(), location)
        return EdgeShardIndex(Path(location))

    def on_activate(self, location: str) -> None:
        if self.uses_qdrant_server and not pgvector_index.in_postgres(location):
            from pipelines.adapters.qdrant_server import point_alias

            point_alias(self.qdrant(), location)

    def drop_index(self, location: str) -> None:
        if pgvector_index.in_postgres(location):
            pgvector_index.drop(self.index_pool(), self.settings.postgres_schema, location)
        elif self.uses_qdrant_server:
            self.qdrant().delete_collection(location)
        else:
            shutil.rmtree(location, ignore_errors=True)

    def drop_if_released(self, location: str) -> bool:
        """Drop a superseded shard unless a process still holds it open (a Qdrant Edge shard admits one
        handle, so opening it tells); a collection or PostgreSQL table pair is dropped at once. True when it is
        gone."""
        if pgvector_index.in_postgres(location):
            self.drop_index(location)
            return True
        if self.uses_qdrant_server:
            if self.qdrant().collection_exists(location):
                self.qdrant().delete_collection(location)
            return True
        path = Path(location)
        if not path.exists():
            return True
        try:
            EdgeShardIndex(path).close()
        except StoreUnavailable:
            return False
        shutil.rmtree(path, ignore_errors=True)
        return True

    def release_superseded(self, spare: Collection[str] = ()) -> list[str]:
        """Drop every superseded location (replaced by a forced rebuild of its version) that no process
        holds any more, except those in `spare`; the registry forgets what was dropped."""
        dropped = []
        for location in self.registry.superseded():
            if location not in spare and self.drop_if_released(location):
                self.registry.forget_superseded(location)
                dropped.append(location)
        return dropped

    def released(self, location: str) -> None:
        """A server closed `location`: drop it when it was superseded. On a Qdrant server other servers may
        still read it until they poll the registry; the next build's activation drops it there."""
        superseded = not self.read_by_every_process(location) and location in self.registry.superseded()
        if superseded and self.drop_if_released(location):
            self.registry.forget_superseded(location)

    def close(self) -> None:
        self.registry.close()
        if self._index_pool is not None:
            self._index_pool.close()
        if self.services is not None:
            self.services.stop()


def open_stores(settings: Settings) -> Stores:
    """Connect to (embedded: start) the registry and cache of the settings' profile."""
    services = None
    dsn, redis_url = settings.postgres_dsn, settings.redis_url
    if settings.profile == "embedded" and (dsn is None or redis_url is None):
        services = EmbeddedServices(settings.data_dir)
        dsn = dsn or services.postgres_dsn()
        redis_url = redis_url or services.redis_url()
    if dsn is None or redis_url is None:
        raise StoreUnavailable("the services profile needs RAGLINE_POSTGRES_DSN and RAGLINE_REDIS_URL")
    registry = Registry(
        dsn,
        settings.postgres_schema,
        pool_min=settings.postgres_pool_min,
        pool_max=settings.postgres_pool_max,
        pool_timeout=settings.postgres_pool_timeout_seconds,
    )
    return Stores(settings, registry, RedisCache(redis_url), services, postgres_dsn=dsn)
