"""A Hamilton lifecycle adapter that times every node of every request.

The driver is built once and shared by concurrent requests, so timings go into a per-request dict
held in a context variable that the caller sets before executing.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

from hamilton.lifecycle import NodeExecutionHook

current_timings: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar(
    "ragline_node_timings", default=None
)
_starts: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("ragline_node_starts", default=None)


class NodeTimer(NodeExecutionHook):
    def run_before_node_execution(self, *, node_name: str, **future_kwargs: Any) -> None:
        starts = _starts.get()
        if starts is None:
            starts = {}
            _starts.set(starts)
        starts[node_name] = time.perf_counter()

    def run_after_node_execution(self, *, node_name: str, **future_kwargs: Any) -> None:
        starts, timings = _starts.get(), current_timings.get()
        if starts is None or timings is None or node_name not in starts:
            return
        timings[node_name] = round((time.perf_counter() - starts.pop(node_name)) * 1000, 3)
