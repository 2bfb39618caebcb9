"""Build the Hamilton driver once at start-up; every request reuses it."""

from __future__ import annotations

import logging
from typing import Any

from hamilton import driver

from query_graph import cache, generation, reply, retrieval, validation
from query_graph.port_inputs import PortAwareInputCheck
from query_graph.timing import NodeTimer

# Hamilton logs an advert at ERROR level before re-raising any node error; we report errors ourselves.
logging.getLogger("hamilton.driver").setLevel(logging.CRITICAL)

MODULES = (cache, retrieval, generation, validation, reply)


def build_driver(config: dict[str, Any] | None = None) -> driver.Driver:
    builder = driver.Builder().with_modules(*MODULES).with_config(config or {})
    return builder.with_adapters(NodeTimer(), PortAwareInputCheck()).build()
