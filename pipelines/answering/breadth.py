"""Breadth: does the question's only subject word merely say what the documents are about?

The vagueness rule (pipelines/guardrails/vagueness.py) asks back when a question names no subject at all. A question
that keeps one content word passes it: "widgets?" on a widget toolkit's docs, or "nothing gets drawn" on a drawing
library's. Such a word is on most pages, so it says what the documents are about, not what the asker wants;
an answer would quote whichever sentence about it ranks first. When the question's one content term (as the index's
analyzer writes it) is on at least `min_share` of the index's pages (and on 3 pages at least) and is not written as a name (a name, however
common, is a subject: "Can I use it with Memcached?"), the reply is `clarify`, naming the word. The `bare_topic`
variant asks back a question that is nothing but a short topic, naming sections of the retrieved passages;
`bare_common_topic` only when each of its words is on a large share of the pages, as `common_word` reads it.
The threshold and its evidence: docs/decisions/vagueness.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelines.answering.coverage import name_tokens
from pipelines.guardrails.vagueness import bare_topic, content_words

# Scripts written without spaces: a "word" there is a run of characters, not a subject.
_NO_SPACES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")
MIN_PAGE_SHARE = 0.31
EXAMPLE_SECTIONS = 3  # sections of the retrieved passages a bare topic's question back offers
MIN_PAGES = 3  # in a tiny index every word is on a large share of its pages: a word on one or two points at them


@dataclass(frozen=True)
class Breadth:
    broad: bool
    word: str | None = None  # the one content word, as the question writes it (a bare topic: the whole question)
    page_share: float | None = None  # the share of the index's pages holding it
    sections: tuple[str, ...] = ()  # `bare_topic`: sections of the retrieved passages, offered as examples

    def as_reply(self) -> dict[str, object]:
        return {"broad": self.broad, "word": self.word, "page_share": self.page_share, "sections": list(self.sections)}


def assess_breadth(
    question: str,
    language: str | None,
    terms_of: Callable[[str], list[str]],
    pages_holding: Callable[[str], tuple[int, int]],
    min_share: float = MIN_PAGE_SHARE,
) -> Breadth:
    """`terms_of(word)`: the word as the index's analyzer writes it; `pages_holding(term)`: (pages holding that
    term, pages in all). Only a question left with exactly one content term is judged."""
    if _NO_SPACES.search(question):
        return Breadth(False)
    words = content_words(question)
    terms = list(dict.fromkeys(t for w in words for t in terms_of(w)))
    if len(terms) != 1:
        return Breadth(False)
    names = {n.lower() for n in name_tokens(question, language)}
    word = next(w for w in words if terms_of(w))
    if any(w.lower() in names for w in words):
        return Breadth(False, word)
    holding, pages = pages_holding(terms[0])
    share = round(holding / pages, 3) if pages else 0.0
    return Breadth(share >= min_share and holding >= MIN_PAGES, word, share)


def assess_bare_topic(
    question: str,
    sections: Sequence[str],
    examples: int = EXAMPLE_SECTIONS,
    terms_of: Callable[[str], list[str]] | None = None,
    pages_holding: Callable[[str], tuple[int, int]] | None = None,
    min_share: float = MIN_PAGE_SHARE,
) -> Breadth:
    """A question that is only a short topic (`vagueness.bare_topic`: "transactions", "hooks?") names what to read
    about, not what the asker wants to know; it is asked back, offering the first `examples` distinct sections of
    the retrieved passages (`sections`, best first) as what the documents say about it.
    With `terms_of` and `pages_holding` (as `assess_breadth`), only a common topic is: every content term of the
    question is on at least `min_share` of the pages (and on `MIN_PAGES`), so a rare one ("upsert", a tool's name)
    points at the few pages about it and is answered."""
    words = bare_topic(question)
    if not words:
        return Breadth(False)
    topic = question.strip().rstrip("?!. ")
    share = None
    if terms_of is not None and pages_holding is not None:
        terms = list(dict.fromkeys(t for w in content_words(question) for t in terms_of(w)))
        counts = [pages_holding(t) for t in terms]
        shares = [held / pages if pages else 0.0 for held, pages in counts]
        if not terms or any(held < MIN_PAGES for held, _ in counts) or min(shares) < min_share:
            return Breadth(False, topic, round(min(shares), 3) if shares else None)
        share = round(min(shares), 3)
    offered = tuple(dict.fromkeys(s for s in sections if s))[:examples]
    return Breadth(True, topic, share, sections=offered)


def clarifying_question(breadth: Breadth) -> str:
    """The question asked back: the word is what most of the documents are about; with `sections`, where the
    documents speak of it."""
    if breadth.sections:
        return (
            f"What do you want to know about “{breadth.word}”? The documents cover it in several places, for "
            f"example: {'; '.join(breadth.sections)}. Ask about one of them, or say what you want to do."
        )
    return (
        f"“{breadth.word}” comes up on many pages of these documents. What do you want to know or do about it? "
        "Tell me what you tried and what happened (a setting, a command, an error message)."
    )
