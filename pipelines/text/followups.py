"""Follow-up questions made standalone by rule: the `rules` variant of the query graph's `standalone_question` node.

A question in a conversation is a follow-up when it leans on what came before: it refers back with a pronoun
or a demonstrative ("how do I undo that?", "is it kept?"), opens as a continuation ("and on Windows?", "what
about ...", "what if ..."), or names too little to be searched alone (two content words or fewer). A follow-up
is searched with the previous turn's standalone question after it, in brackets, so retrieval and the answer
see the subject the follow-up leaves out; a question that stands alone is left as it is. Only the previous
turn's standalone question is read: it already carries the subject of the turns before it.

Rules cannot tell which earlier words a pronoun stands for, so the subject's words come along whole, and a
follow-up that changes the subject while keeping a pronoun ("what is it used for?" after an unrelated
question) is rewritten all the same. The `llm` variant asks the language model instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.text.analysis import STOPWORDS, analyze

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Words that point back at something said before (English). "that" and "there" count only where they cannot be
# a conjunction or "is there": as the last word ("how do I undo that?") or after a verb-less "about", "in", ...
REFERRING = frozenset(["it", "its", "itself", "they", "them", "their", "theirs", "this", "these", "those"])
_TRAILING = frozenset(["that", "there", "one", "ones", "then"])
_EXISTENTIAL = frozenset(["is", "are", "was", "were", "be", "isn't", "aren't"])
# "that" after these is a demonstrative ("with that idea", "is that code kept?"), not a conjunction.
_BEFORE_DEMONSTRATIVE = frozenset(
    [
        "with",
        "about",
        "of",
        "on",
        "in",
        "for",
        "to",
        "from",
        "by",
        "at",
        "is",
        "does",
        "do",
        "did",
        "can",
        "was",
        "will",
    ]
)
CONTINUATIONS = ("and ", "but ", "also ", "so ", "or ", "what about", "how about", "what if", "why not", "then ")
# A question naming at most this many content words leans on its context.
FEW_CONTENT_WORDS = 2
# The most of the previous standalone question carried along (it grows by one question a follow-up).
MAX_CONTEXT_CHARS = 600


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: what was asked, what it was taken to mean, and the reply's text."""

    question: str
    standalone_question: str
    answer: str = ""


def is_follow_up(question: str) -> bool:
    lowered = question.strip().lower()
    words = [w.lower() for w in _WORD.findall(lowered)]
    if not words:
        return False
    if any(word in REFERRING for word in words) or words[-1] in _TRAILING:
        return True
    if any(w == "there" and (i == 0 or words[i - 1] not in _EXISTENTIAL) for i, w in enumerate(words)):
        return True
    if any(w == "that" and i > 0 and words[i - 1] in _BEFORE_DEMONSTRATIVE for i, w in enumerate(words)):
        return True
    if lowered.startswith(CONTINUATIONS):
        return True
    content = [term for term in analyze(question) if term not in STOPWORDS]
    return len(set(content)) <= FEW_CONTENT_WORDS


def standalone_by_rules(question: str, history: Sequence[Turn]) -> str:
    """`question` with the previous turn's standalone question after it when it is a follow-up; else as it is."""
    if not history or not is_follow_up(question):
        return question
    previous = history[-1].standalone_question.strip() or history[-1].question.strip()
    if not previous:
        return question
    return f"{question.strip()} ({previous[:MAX_CONTEXT_CHARS]})"
