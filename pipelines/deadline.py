"""The request's deadline, in a context variable: work past it stops at its next check instead of running on.

`QueryService.answer` sets it from `request_timeout_seconds`; the query graph checks it before every node
(query_graph/timing.py) and the language-model harness shortens its own deadline to what is left of it, so a
timed-out request ends its work, not only its response. Without a deadline set, nothing is checked.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

# time.monotonic() seconds at which the request's work must stop; None: no deadline.
request_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ragline_request_deadline", default=None
)


class DeadlinePassed(TimeoutError):
    """The request ran past its deadline; raised at the next check, which names where the work stopped."""


@contextmanager
def deadline_in(seconds: float | None) -> Iterator[None]:
    """Work in the block must end within `seconds` (None or <= 0: no deadline). An outer, earlier deadline
    stays in force."""
    if seconds is None or seconds <= 0:
        yield
        return
    ends = time.monotonic() + seconds
    outer = request_deadline.get()
    token = request_deadline.set(ends if outer is None else min(outer, ends))
    try:
        yield
    finally:
        request_deadline.reset(token)


def remaining_seconds() -> float | None:
    """Seconds left before the request's deadline (negative once passed); None when there is none."""
    ends = request_deadline.get()
    return None if ends is None else ends - time.monotonic()


def check_deadline(stage: str) -> None:
    """Raise `DeadlinePassed` if the request's deadline has passed, naming the `stage` that would run next."""
    left = remaining_seconds()
    if left is not None and left <= 0:
        raise DeadlinePassed(f"the request ran out of time (request_timeout_seconds) before {stage}")
