"""What a question asks: one thing, or two or more ("Which file holds the setting, and what do I restart
after changing it?"). English patterns only: a question in another language counts as one ask.

An ask is a question sentence, or a clause of one that starts with a wh-word after "and" or ";". A clause
before a comma ("After installing it, where ...") and nouns joined by "and" ("for the server and the worker")
are part of one ask; statements before the question ("The build fails.") are no ask. Two places read
it: the bridge hop (pipelines/retrieval/bridge_hop.py) searches a second page only for a question of two asks, and the
extractive answer (pipelines/answering/extractive.py) gives each ask its best sentence.
"""

from __future__ import annotations

import re

_SECOND_ASK = re.compile(r"(?:\band|;)\s+(?=(?:what|which|how|where|when|who|whose|why)\b)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[?.!])\s+")


def split_asks(question: str) -> list[str]:
    """The question's asks, in order; `[question]` when it asks one thing."""
    asks: list[str] = []
    statements: list[str] = []
    for sentence in _SENTENCE_END.split(question.strip()):
        if not sentence.endswith("?"):
            statements.append(sentence)  # context of every ask, not an ask
            continue
        asks.extend(part.strip(" ,;") for part in _SECOND_ASK.split(sentence))
    asks = [ask for ask in asks if len(ask.split()) >= 2]
    if len(asks) < 2:
        return [question]
    return [" ".join([*statements, ask]) for ask in asks]


def asks_two(question: str) -> bool:
    """Whether the question asks two things or more."""
    return len(split_asks(question)) >= 2
