"""Build the Hamilton driver once at start-up; every request reuses it."""

from __future__ import annotations

import logging
from typing import Any

from hamilton import driver

from pipelines.caching.built_once import BuiltOnce
from query_graph.nodes import (
    cache,
    conversation,
    coverage,
    crag,
    gate,
    generation,
    guardrails,
    reply,
    rerank,
    retrieval,
    validation,
    verification,
)
from query_graph.port_inputs import PortAwareInputCheck
from query_graph.timing import NodeTimer

# Hamilton logs an advert at ERROR level before re-raising any node error; we report errors ourselves.
logging.getLogger("hamilton.driver").setLevel(logging.CRITICAL)

MODULES = (
    conversation,
    guardrails,
    cache,
    gate,
    retrieval,
    coverage,
    rerank,
    crag,
    generation,
    validation,
    verification,
    reply,
)


def build_driver(config: dict[str, Any] | None = None) -> driver.Driver:
    builder = driver.Builder().with_modules(*MODULES).with_config(config or {})
    return builder.with_adapters(NodeTimer(), PortAwareInputCheck()).build()


class DriverCache:
    """One driver per distinct variant configuration, built on first use (never per request); the `keep` most
    recently used are kept. Requests may choose among about 10^5 combinations of variants: kept without a bound,
    one caller cycling through them would hold a driver for each."""

    def __init__(self, keep: int = 16) -> None:
        self._drivers: BuiltOnce[tuple[tuple[str, Any], ...], driver.Driver] = BuiltOnce(keep)

    def get(self, config: dict[str, Any]) -> driver.Driver:
        return self._drivers.get(tuple(sorted(config.items())), lambda: build_driver(config))

    def __len__(self) -> int:
        return len(self._drivers)
