"""The active index as every process sees it: read from the registry, re-read every few seconds.

A change of the active version, or of its location (a forced rebuild), opens the new index and closes the
old one; the old location is then offered to `released`, which drops it when it was superseded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from pipelines.adapters.registry import IndexVersion, Registry
from pipelines.ports import StoreUnavailable, VectorIndex

log = structlog.get_logger(__name__)


class NoActiveIndex(LookupError):
    """No index version is active yet: build one first."""


class VectorStoreUnavailable(StoreUnavailable):
    """The active version's shard or collection cannot be opened."""


class FingerprintMismatch(RuntimeError):
    """The active index was built with another embedding model than the one configured."""


class ActiveIndex:
    def __init__(
        self,
        registry: Registry,
        opener: Callable[[str], VectorIndex],
        fingerprint: str,
        poll_seconds: float,
        released: Callable[[str], None] | None = None,
    ) -> None:
        self._registry, self._open, self._fingerprint = registry, opener, fingerprint
        self._released = released  # told each location this process closed (a superseded one is dropped)
        self._poll = poll_seconds
        self._lock = threading.Lock()
        self._current: tuple[IndexVersion, VectorIndex] | None = None
        self._checked_at = 0.0

    def current(self) -> tuple[IndexVersion, VectorIndex]:
        with self._lock:
            if self._current is None or time.monotonic() - self._checked_at >= self._poll:
                self._refresh()
            if self._current is None:
                raise NoActiveIndex("no index is active: run `ragline index build` first")
            return self._current

    def _refresh(self) -> None:
        try:
            active = self._registry.active()
        except StoreUnavailable:
            if self._current is None:
                raise
            log.warning("registry_unreachable_keeping_index", version=self._current[0].version)
            return
        self._checked_at = time.monotonic()
        # A forced rebuild keeps the version and changes its location: either change reopens.
        if active is None or (
            self._current is not None
            and (self._current[0].version, self._current[0].location) == (active.version, active.location)
        ):
            return
        if active.fingerprint != self._fingerprint:
            raise FingerprintMismatch(
                f"active index {active.version} was built with embedding {active.fingerprint}; "
                f"this server embeds with {self._fingerprint}. Rebuild the index or configure its model."
            )
        try:
            opened = self._open(active.location)
        except StoreUnavailable as exc:
            raise VectorStoreUnavailable(str(exc)) from exc
        previous, self._current = self._current, (active, opened)
        log.info("index_activated_here", version=active.version, location=active.location, chunks=active.chunk_count)
        if previous is not None:
            previous[1].close()
            if self._released is not None:
                try:
                    self._released(previous[0].location)
                except Exception as exc:  # cleanup only: the new index is already served
                    log.warning("index_release_failed", location=previous[0].location, error=str(exc))
