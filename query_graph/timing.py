"""Per-node timings of every request: a Hamilton lifecycle adapter for the nodes the driver runs, and
`timed` for those the front of the graph calls itself (query_graph/front.py); both write the same keys.
Both check the request's deadline (pipelines/deadline.py) before a node runs.

The driver is built once and shared by concurrent requests, so timings go into a per-request dict
held in a context variable that the caller sets before executing.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import Any, TypeVar

from hamilton.lifecycle import NodeExecutionHook

from pipelines.deadline import check_deadline

current_timings: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar(
    "ragline_node_timings", default=None
)
T = TypeVar("T")

_starts: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("ragline_node_starts", default=None)


class NodeTimer(NodeExecutionHook):
    def run_before_node_execution(self, *, node_name: str, **future_kwargs: Any) -> None:
        check_deadline(node_name)  # a request past its deadline runs no further node
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


def timed(node_name: str, fn: Callable[..., T], kwargs: dict[str, Any]) -> T:
    """`fn(**kwargs)`, its time in milliseconds recorded under `node_name` as `NodeTimer` records it."""
    check_deadline(node_name)
    started = time.perf_counter()
    value = fn(**kwargs)
    timings = current_timings.get()
    if timings is not None:
        timings[node_name] = round((time.perf_counter() - started) * 1000, 3)
    return value


# When the request began (perf_counter seconds), for `first_sentence`: set by QueryService.answer.
request_started: contextvars.ContextVar[float | None] = contextvars.ContextVar("ragline_request_started", default=None)


def mark_first_sentence() -> None:
    """Record `first_sentence`, milliseconds from the request's start to its first validated and verified
    sentence, the first time one is released (query_graph/sink.py)."""
    timings, started = current_timings.get(), request_started.get()
    if timings is not None and started is not None and "first_sentence" not in timings:
        timings["first_sentence"] = round((time.perf_counter() - started) * 1000, 3)
