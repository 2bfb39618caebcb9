"""Coverage: does the corpus mention what the question is about at all?

A cheap, explainable abstention signal that needs no model and no calibration. Dense similarity
cannot tell a question about deploying with a tool the docs never mention (say, "Zorblax") from an
answerable deployment question (both sit close to the deployment pages), but the corpus can say that
it never contains the word "Zorblax".
Two rules, each a lookup of single terms in the index's BM25 vocabulary:

- **names**: a term written as a name (mixed case such as `gRPC`, an acronym such as `ODM`, a
  capitalised word inside the sentence, an identifier such as `a.m.` or `max_workers`) that no chunk
  contains. Numbers and versions are not names (a false premise such as "release 2.7.1" must still be
  answered with a correction), and a compound counts as mentioned when one of its word parts is
  (`javascript/css`). Capitalised words are not names in German, where every noun is capitalised.
  With `asked_only` (`RAGLINE_COVERAGE_NAMES=asked`) a name counts only in a sentence that asks (one ending in a
  question mark, when the question has both kinds): the sentences before it tell the asker's situation ("My CLI
  tool starts a local server.", "On my MacBook, ..."), and a name there is not what the docs must cover. A
  lowercase hyphenated compound (`short-lived`, `trade-off`) is an English word, not a name, in that mode.
- **vocabulary**: most of the question's content words (at least `min_absent`, and at least
  `min_absent_share` of them) appear nowhere in the corpus: "What is the boiling point of mercury?".

Unsegmented CJK runs are skipped: the analyzer keeps them whole, so they would never match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pipelines.answering.crag import FILLER
from pipelines.answering.extractive import QUESTION_WORDS, question_terms
from pipelines.text.analysis import STOPWORDS, analyze

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_EDGE = "\"'`()[]{}<>,;:!?¿¡«»“”‘’"
_PIECE = re.compile(r"[^\s()\[\]{}<>,;:\"“”]+")
_ABBREVIATION = re.compile(r"(?:\w\.){2,}")
_SENTENCE_END = (".", "?", "!", "。", "？", "！")
_ASKING_END = ("?", "？")
_COMPOUND_WORD = re.compile(r"[a-z]+(?:-[a-z]+)+")
# Question words and pronouns are capitalised after a colon or a quote, but they name nothing.
_NOT_NAMES = frozenset({*FILLER, *QUESTION_WORDS, *STOPWORDS, "e.g", "i.e", "etc", "vs", "ok"})
# An English possessive or contraction ending: "FastAPI's" names FastAPI, "I've" and "I'm" name nobody.
_CONTRACTION = re.compile(r"['’](?:s|ve|m|ll|d|re)$", re.IGNORECASE)
# Languages whose orthography capitalises every noun: a capital letter says nothing there.
NOUN_CAPITALISING = frozenset({"de", "lb"})


@dataclass(frozen=True)
class Coverage:
    covered: bool
    rule: str | None  # "names" or "vocabulary" when not covered
    uncovered_names: list[str] = field(default_factory=list)
    absent_terms: list[str] = field(default_factory=list)
    content_terms: int = 0

    def as_reply(self) -> dict[str, object]:
        return {
            "covered": self.covered,
            "rule": self.rule,
            "uncovered_names": self.uncovered_names,
            "absent_terms": self.absent_terms,
            "content_terms": self.content_terms,
        }


def _is_name(token: str, capitals_mean_names: bool) -> bool:
    letters = [ch for ch in token if ch.isalpha()]
    if len(letters) < 2 or _CJK.search(token):
        return False
    if re.search(r"\w[._/\-]\w", token):
        return True  # an identifier or an abbreviation: max_workers, a.m, javascript/css
    if re.search(r"[a-z][A-Z]", token) or (token.isupper() and len(letters) >= 2):
        return True  # gRPC, MongoDB, ODM
    return capitals_mean_names and token[0].isupper() and token[1:].islower()


def name_tokens(question: str, language: str | None, asked_only: bool = False) -> list[str]:
    """Tokens written as names, skipping the first word of each sentence (capitalised anyway). `asked_only`: only
    those of the sentences that ask, when the question also has sentences that do not, and no lowercase hyphenated
    compound."""
    capitals_mean_names = language not in NOUN_CAPITALISING
    found: list[tuple[str, int]] = []
    asking: list[bool] = []  # per sentence: does it end with a question mark?
    sentence_start = True
    for match in _PIECE.finditer(question):
        raw = match.group(0)
        # FastAPI's -> FastAPI; I've, I'm, I'll -> I (a pronoun, one letter: never a name)
        token = _CONTRACTION.sub("", raw.strip(_EDGE).rstrip("."))
        if token and not sentence_start and token.lower() not in _NOT_NAMES and _is_name(token, capitals_mean_names):
            found.append((token, len(asking)))
        # "a.m." and "e.g." end with a full stop but do not end the sentence.
        after = question[match.end() : match.end() + 2].lstrip(")]}\"'”’ ")
        ends = after.startswith(_SENTENCE_END)
        sentence_start = (raw.endswith(_SENTENCE_END) or ends) and not _ABBREVIATION.fullmatch(raw)
        if sentence_start:
            asking.append(raw.rstrip(")]}\"'”’").endswith(_ASKING_END) or after.startswith(_ASKING_END))
    if not sentence_start:
        asking.append(question.rstrip().endswith(_ASKING_END))
    mixed = any(asking) and not all(asking)
    names = [
        token
        for token, at in found
        if not asked_only or (not _COMPOUND_WORD.fullmatch(token) and (not mixed or asking[at]))
    ]
    return list(dict.fromkeys(names))


def _mentioned(name: str, contains: Callable[[str], bool]) -> bool:
    whole = name.lower()
    if contains(whole):
        return True
    parts = [p for p in re.split(r"[._/\-]+", whole) if len(p) >= 3 and p != whole]
    return any(contains(p) for p in parts)


def assess(
    question: str,
    language: str | None,
    contains: Callable[[str], bool],
    min_absent: int = 2,
    min_absent_share: float = 0.5,
    names: bool = True,
    asked_only: bool = False,
) -> Coverage:
    """`contains(term)`: does any chunk of the index hold this analyzed term? `names` False: only the
    vocabulary rule runs (`RAGLINE_COVERAGE_NAMES=off`); `asked_only`: names of the asking sentences only
    (`RAGLINE_COVERAGE_NAMES=asked`, `name_tokens`)."""
    names_asked = name_tokens(question, language, asked_only) if names else []
    uncovered = [n for n in names_asked if not _mentioned(n, contains)]
    terms = [t for t in question_terms(question) if not _CJK.search(t) and not t.replace(".", "").isdigit()]
    # Only whole words: an identifier's parts were added by the analyzer and are judged with it.
    words = [t for t in terms if t in set(analyze(re.sub(r"[._/\-]", " ", t)))]
    absent = [t for t in words if not contains(t)]
    if uncovered:
        return Coverage(False, "names", uncovered, absent, len(words))
    if len(absent) >= min_absent and len(absent) >= min_absent_share * len(words):
        return Coverage(False, "vocabulary", [], absent, len(words))
    return Coverage(True, None, [], absent, len(words))
