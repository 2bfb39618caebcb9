"""Stream an answer: each sentence as soon as it is validated (and verified), then the whole reply.

    for event in stream_answer(service, question, variants):
        {"type": "sentence", "text": "... [C:<chunk_id>].", "chunk_ids": ["<chunk_id>"]}  # zero or more
        {"type": "final", **reply}                                                        # exactly one, last

The graph runs in a worker thread with a sink in a context variable (query_graph/sink.py); nodes put
sentences into it the moment they are released. With the `litellm` generator that is while the model
is still writing; with `extractive` the draft is whole at once and its sentences are released one by
one after validation and verification. A cache hit releases the cached reply's sentences. Failures
raise `QueryFailed` from the iterator (before or after some sentences). Closing the iterator (the
client went away) cancels the generation: the generator stops at its next token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pipelines.access import EVERYTHING, Access
from pipelines.answering.citations import markers, split_sentences
from pipelines.text.followups import Turn
from query_graph.service import QueryService
from query_graph.sink import SentenceSink, current_sink

_DONE: dict[str, Any] = {"type": "_done"}


def stream_answer(
    service: QueryService,
    question: str,
    variants: dict[str, str] | None = None,
    top_k: int | None = None,
    language: str | None = None,
    history: Sequence[Turn] = (),
    on_reply: Callable[[dict[str, Any]], None] | None = None,
    access: Access = EVERYTHING,
) -> Iterator[dict[str, Any]]:
    """`language`: the question's language as the caller states it (`QueryService.answer(language=...)`);
    `history`: the conversation's earlier turns. `on_reply` runs on the reply in the worker thread, before the
    `final` event is released (the server records the conversation's turn there)."""
    sink = SentenceSink()
    outcome: dict[str, Any] = {}

    def work() -> None:
        token = current_sink.set(sink)
        try:
            reply = service.answer(
                question, top_k=top_k, variants=variants, language=language or None, history=history, access=access
            )
            if on_reply is not None:
                on_reply(reply)
            outcome["reply"] = reply
        except BaseException as exc:  # handed to the reading thread, which raises it
            outcome["error"] = exc
        finally:
            current_sink.reset(token)
            sink.events.put(_DONE)

    worker = threading.Thread(target=work, name="ragline-stream", daemon=True)
    worker.start()
    released = 0
    try:
        while (event := sink.events.get()) is not _DONE:
            released += 1
            yield event
        if "error" in outcome:
            raise outcome["error"]
        reply = outcome["reply"]
        if not released and reply["status"] == "answered":  # a cache hit: nothing ran to release them
            for sentence in split_sentences(reply["answer"]):
                yield {"type": "sentence", "text": sentence, "chunk_ids": list(dict.fromkeys(markers(sentence)))}
        yield {"type": "final", **reply}
    finally:
        sink.cancelled.set()  # a no-op after the end; on an early close it stops the generator
