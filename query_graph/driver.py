"""Build the Hamilton driver once at start-up; every request reuses it."""

from __future__ import annotations

import logging
import threading
from typing import Any

from hamilton import driver

from query_graph.nodes import (
    cache,
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

MODULES = (guardrails, cache, gate, retrieval, coverage, rerank, crag, generation, validation, verification, reply)


def build_driver(config: dict[str, Any] | None = None) -> driver.Driver:
    builder = driver.Builder().with_modules(*MODULES).with_config(config or {})
    return builder.with_adapters(NodeTimer(), PortAwareInputCheck()).build()


class DriverCache:
    """One driver per distinct variant configuration, built on first use and kept (never per request)."""

    def __init__(self) -> None:
        self._drivers: dict[tuple[tuple[str, Any], ...], driver.Driver] = {}
        self._lock = threading.Lock()

    def get(self, config: dict[str, Any]) -> driver.Driver:
        key = tuple(sorted(config.items()))
        with self._lock:
            if key not in self._drivers:
                self._drivers[key] = build_driver(config)
            return self._drivers[key]

    def __len__(self) -> int:
        return len(self._drivers)
