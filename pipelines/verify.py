"""Citation verification: does the cited passage say what the sentence says?

`support_score` is the lexical check: the share of a sentence's content words, numbers and
identifiers that the passage contains, after light suffix stripping. Identifiers weigh double and
numbers triple, and a number missing from the passage halves the score: a wrong port or version
makes a wrong answer. It asks "does this text say this?" more strictly than a similarity
score would: every word the sentence adds beyond the passage lowers it. Measured on labelled pairs
by `evals/verify_pairs.py` (docs/operations.md). Chinese and Japanese text, written without spaces, is
compared by overlapping character pairs (as BM25 reads it): a paraphrased Chinese sentence is a run of
characters that never occurs whole in its passage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipelines.bm25 import analyze_snowball
from pipelines.citations import strip_markers


def terms_of(text: str) -> list[str]:
    """Plain terms (no stemming: `stem` below does the light stripping), CJK runs as character pairs."""
    return analyze_snowball(text, None)


_NUMBER = re.compile(r"^\d[\d.,:]*$")
_IDENTIFIER = re.compile(r"[_.\-/]|[a-z][A-Z]|\d")
# Words that carry no claim of their own in an answer sentence.
_LIGHT = frozenset(
    [
        "also",
        "just",
        "only",
        "very",
        "more",
        "most",
        "some",
        "other",
        "such",
        "same",
        "each",
        "every",
        "all",
        "both",
        "either",
        "neither",
        "should",
        "would",
        "could",
        "might",
        "must",
        "may",
        "shall",
        "one",
        "two",
        "default",
        "can",
        "use",
        "used",
        "using",
        "set",
    ]
)
_SUFFIXES = ("ing", "edly", "ed", "es", "s", "ly", "ment", "ness", "ation")


def stem(term: str) -> str:
    if _IDENTIFIER.search(term):
        return term  # identifiers and numbers match exactly
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def claim_terms(sentence: str) -> dict[str, float]:
    """The sentence's content terms with their weights (numbers 3, identifiers 2, words 1)."""
    weights: dict[str, float] = {}
    for raw in re.findall(r"\S+", strip_markers(sentence)):
        for term in terms_of(raw):
            if term in _LIGHT or len(term) < 2:
                continue
            heavy = bool(_IDENTIFIER.search(raw.strip(".,;:()'\"`")))
            weight = 3.0 if _NUMBER.match(term) else 2.0 if heavy else 1.0
            weights[stem(term)] = max(weights.get(stem(term), 0.0), weight)
    return weights


def support_score(sentence: str, passage: str) -> float:
    """Weighted share of the sentence's claim terms found in the passage, 0..1 (1 when it has none)."""
    terms = claim_terms(sentence)
    if not terms:
        return 1.0
    present = {stem(t) for t in terms_of(passage)}
    total = sum(terms.values())
    share = sum(w for t, w in terms.items() if t in present) / total
    # A number the passage does not contain makes the claim wrong however much else matches
    # (a long sentence with one changed port or version would otherwise pass).
    if any(_NUMBER.match(t) and t not in present for t in terms):
        share *= 0.5
    return share


@dataclass(frozen=True)
class Check:
    chunk_id: str
    score: float
    supported: bool
    reason: str


def check_citations(sentence: str, cited: Iterable[tuple[str, str]], min_support: float) -> list[Check]:
    """One check per (chunk_id, passage text) the sentence cites."""
    out = []
    for chunk_id, passage in cited:
        score = support_score(sentence, passage)
        ok = score >= min_support
        reason = "supported" if ok else f"only {score:.0%} of the sentence's content words are in the passage"
        out.append(Check(chunk_id, round(score, 4), ok, reason))
    return out


def best_support(sentence: str, passages: Iterable[tuple[str, str]]) -> tuple[str | None, float]:
    """The passage that best supports a sentence (to attach a citation a generator left out)."""
    best: tuple[str | None, float] = (None, 0.0)
    for chunk_id, passage in passages:
        score = support_score(sentence, passage)
        if score > best[1]:
            best = (chunk_id, score)
    return best
