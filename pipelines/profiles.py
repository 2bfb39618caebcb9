"""Profiles: the one place where each outside system is chosen (embedded or services).

`open_stores(settings)` gives everything the graphs need: registry, cache, and the vector-store
operations for an index version, whichever profile is active.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.cache_redis import RedisCache
from pipelines.embedded_services import EmbeddedServices
from pipelines.ports import StoreUnavailable, VectorIndex, VectorIndexWriter
from pipelines.registry import Registry
from pipelines.settings import Settings
from pipelines.vector_store_edge import EdgeShardIndex, EdgeShardWriter


@dataclass
class Stores:
    settings: Settings
    registry: Registry
    cache: RedisCache
    services: EmbeddedServices | None = None
    _qdrant: Any = field(default=None, repr=False)

    @property
    def uses_qdrant_server(self) -> bool:
        return self.settings.qdrant_url is not None

    def location_for(self, version: str) -> str:
        if self.uses_qdrant_server:
            return f"ragline_{version.replace('-', '_')}"
        return str(self.settings.shards_dir / version)

    def qdrant(self) -> Any:
        if self._qdrant is None:
            from pipelines.vector_store_qdrant import connect

            assert self.settings.qdrant_url is not None
            self._qdrant = connect(self.settings.qdrant_url)
        return self._qdrant

    def index_writer(self, location: str, dimension: int) -> VectorIndexWriter:
        if self.uses_qdrant_server:
            from pipelines.vector_store_qdrant import QdrantCollectionWriter

            return QdrantCollectionWriter(self.qdrant(), location, dimension)
        return EdgeShardWriter(Path(location), dimension)

    def open_index(self, location: str) -> VectorIndex:
        if self.uses_qdrant_server:
            from pipelines.vector_store_qdrant import QdrantCollectionIndex

            return QdrantCollectionIndex(self.qdrant(), location)
        return EdgeShardIndex(Path(location))

    def on_activate(self, location: str) -> None:
        if self.uses_qdrant_server:
            from pipelines.vector_store_qdrant import point_alias

            point_alias(self.qdrant(), location)

    def drop_index(self, location: str) -> None:
        if self.uses_qdrant_server:
            self.qdrant().delete_collection(location)
        else:
            shutil.rmtree(location, ignore_errors=True)

    def close(self) -> None:
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
    return Stores(settings, Registry(dsn, settings.postgres_schema), RedisCache(redis_url), services)
