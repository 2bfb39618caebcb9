"""Where validated sentences go the moment they are released, when a caller streams the answer.

`stream_answer` (query_graph/streaming.py) runs the graph in a worker thread with a sink set in a
context variable; the generation and verification nodes release each sentence to it once it has
passed validation and verification. Closing the stream sets `cancelled`, which the generator checks
between tokens, so generation stops when the client goes away.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from typing import Any

from pipelines.answering.citations import ValidatedSentence
from query_graph.timing import mark_first_sentence


class GenerationCancelled(RuntimeError):
    """The client stopped reading: the generator stops."""


class SentenceSink:
    def __init__(self) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.cancelled = threading.Event()
        self._released: set[int] = set()
        self._lock = threading.Lock()

    def release(self, index: int, sentence: ValidatedSentence) -> None:
        """Send a sentence once (generation may release it early; verification releases all again)."""
        with self._lock:
            if index in self._released:
                return
            self._released.add(index)
        self.events.put({"type": "sentence", "text": sentence.text, "chunk_ids": list(sentence.chunk_ids)})


current_sink: contextvars.ContextVar[SentenceSink | None] = contextvars.ContextVar("ragline_sink", default=None)


def release(index: int, sentence: ValidatedSentence) -> None:
    mark_first_sentence()
    sink = current_sink.get()
    if sink is not None:
        sink.release(index, sentence)


def raise_if_cancelled() -> None:
    sink = current_sink.get()
    if sink is not None and sink.cancelled.is_set():
        raise GenerationCancelled("the client closed the stream")
