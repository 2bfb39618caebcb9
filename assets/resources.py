"""Resources of the ingestion graph, chosen from settings in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from dagster import ConfigurableResource

from pipelines.documents import Document
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings


@dataclass
class IngestionEnv:
    """What every ingestion asset needs: settings, the build request, and the stores of the profile."""

    settings: Settings
    request: BuildRequest
    _stores: Stores | None = field(default=None, repr=False)
    # Documents the caller already fetched (to name the version); a URL source is not fetched twice.
    prefetched: list[Document] | None = field(default=None, repr=False)
    # Called as (stage, done, total) while a long stage runs: the CLI draws its progress bar with it.
    progress: Callable[[str, int, int], None] | None = field(default=None, repr=False)
    # Where the shadow index goes when not the version's own location: a forced rebuild of the active
    # version writes a fresh one, since servers hold the active location open.
    location: str | None = None

    @property
    def stores(self) -> Stores:
        if self._stores is None:
            self._stores = open_stores(self.settings)
        return self._stores


class IngestionResource(ConfigurableResource):
    """Settings for `dagster dev`: read from the environment like every other ragline entry point."""

    source: str | None = None
    strategy: str | None = None
    force: bool = False  # rebuild even when this content version is active (the admin API's `force`)

    @cached_property
    def env(self) -> IngestionEnv:
        settings = Settings()
        strategies = (self.strategy,) if self.strategy else None
        return IngestionEnv(settings, BuildRequest.from_settings(settings, source=self.source, strategies=strategies))
