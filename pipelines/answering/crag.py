"""Corrective RAG (Yan et al. 2024), without a trained evaluator: the top retrieval score is graded
against two calibrated bands.

- score >= upper: `generate` from the retrieved passages as they are;
- lower <= score < upper: `refine`: keep only the passages' sentences that bear on the question
  (the paper's "knowledge strips");
- score < lower: `rewrite` the query once and retrieve again; still below `lower` means `no_answer`.

`fit_bands` picks the two bands from graded scores of labelled questions; `ragline calibrate` uses it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.answering.extractive import PLAIN, question_terms
from pipelines.answering.passage_units import introduced, prose_units
from pipelines.text.analysis import Analyzer

# Words that only say a sentence is a question or a request; the rewrite drops them.
FILLER = frozenset(
    {
        "how",
        "what",
        "which",
        "why",
        "when",
        "where",
        "who",
        "whom",
        "can",
        "could",
        "should",
        "would",
        "does",
        "do",
        "did",
        "is",
        "are",
        "i",
        "me",
        "my",
        "we",
        "you",
        "please",
        "tell",
        "explain",
        "know",
        "want",
        "need",
        "possible",
        "way",
        "there",
        "a",
        "an",
        "the",
        "to",
        "of",
        "it",
        "in",
        "on",
        "for",
        "with",
        "about",
    }
)
_WORD = re.compile(r"[\w][\w.\-/]*[\w]|\w", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True)
class Bands:
    lower: float
    upper: float

    def __post_init__(self) -> None:
        if self.lower > self.upper:
            raise ValueError(f"CRAG lower band {self.lower} is above the upper band {self.upper}")


def action(score: float | None, bands: Bands) -> str:
    """`generate`, `refine` or `rewrite` for a top score (no candidates at all: `rewrite`)."""
    if score is None or score < bands.lower:
        return "rewrite"
    return "generate" if score >= bands.upper else "refine"


def rewrite_query(question: str) -> str:
    """A deterministic rewrite: question words dropped, identifiers expanded into their parts.

    `How do I set max_workers?` becomes `set max_workers max workers`: the keywords a passage would
    contain, with both the identifier and its words (which BM25 and the embedder each prefer)."""
    words: list[str] = []
    for token in _WORD.findall(question):
        if token.lower() in FILLER:
            continue
        words.append(token)
        parts = [p for p in re.split(r"[._\-/]+", token) if p]
        if len(parts) == 1 and re.search(r"[a-z][A-Z]", token):
            parts = _CAMEL.findall(token)
        if len(parts) > 1:
            words.extend(p.lower() for p in parts if len(p) > 1)
    rewritten = " ".join(dict.fromkeys(words))
    return rewritten or question


def knowledge_strips(
    question: str, text: str, min_overlap: int = 1, words: Analyzer = PLAIN, language: str | None = None
) -> str:
    """The sentences of a passage sharing at least `min_overlap` content words with the question,
    in order, each with the code block or list it introduces; the whole passage when none does (refining
    must not empty the context). Words are read as the extractive answer reads them (`words`, the
    `answer_analyzer`; both sides in the passage's `language`), so a sentence the answer would match
    by its stem is kept for it."""
    terms = set(question_terms(question, words, language))
    units = prose_units(text)
    kept = [u for u in units if len(terms & set(words(u, language))) >= min_overlap]
    if not kept:
        return text
    # A kept sentence that introduces a block keeps it, after it as in the passage (pipelines/answering/passage_units.py);
    # a kept item of that list is not kept twice.
    follows = introduced(text)
    strips, inside = [], set()
    for unit in kept:
        if unit in inside:
            continue
        # One paragraph each, so the strips read back as the units kept: joined by spaces, a unit with no full
        # stop (one ending in a colon, a table row) ran into the next and made a sentence the passage never had.
        block = follows.get(unit)
        strips.append(f"{unit}\n\n{block}" if block else unit)
        if block:
            inside.update(prose_units(block))
    return "\n\n".join(strips)


@dataclass(frozen=True)
class BandFit:
    bands: Bands
    answerable: int
    unanswerable: int
    answered_share: float  # answerable questions at or above `lower`
    abstained_share: float  # unanswerable questions below `lower`
    direct_share: float  # answerable questions at or above `upper`
    tradeoff: list[dict[str, float]]


def fit_bands(
    scores: Sequence[float], answerable: Sequence[bool], target_recall: float = 0.9, direct_precision: float = 0.95
) -> BandFit:
    """Pick (lower, upper) from the graded top scores of labelled questions.

    `lower` is the highest threshold that still keeps `target_recall` of the answerable questions
    (midway to the next lower score, so it does not sit on a data point), brought down to just above the
    highest unanswerable score under it (to the lowest answerable score when none is under it): the same
    unanswerable questions abstain, and no answerable one is turned away for nothing; `upper` is the lowest
    threshold above which at least `direct_precision` of the questions are answerable (nothing to
    correct there). The trade-off table lists answered/abstained shares at each candidate point."""
    if len(scores) != len(answerable) or not scores:
        raise ValueError("fit_bands needs one label per score, and at least one score")
    pos = sorted(s for s, a in zip(scores, answerable, strict=True) if a)
    neg = sorted(s for s, a in zip(scores, answerable, strict=True) if not a)
    if not pos:
        raise ValueError("fit_bands needs at least one answerable question")

    def share(values: list[float], t: float, above: bool) -> float:
        if not values:
            return 1.0
        return sum((v >= t) == above for v in values) / len(values)

    cut = max(0, min(len(pos) - 1, int((1.0 - target_recall) * len(pos) + 1e-9)))
    lower = pos[cut] if cut == 0 else (pos[cut] + pos[cut - 1]) / 2
    if cut == 0 and neg and min(neg) < pos[0]:
        lower = (pos[0] + max(n for n in neg if n < pos[0])) / 2
    # The lowest threshold that abstains on the same unanswerable questions: above the highest unanswerable
    # score under `lower`, a higher threshold only turns answerable questions away.
    caught = max((n for n in neg if n < lower), default=None)
    floor = pos[0] if caught is None else (caught + min(p for p in pos if p > caught)) / 2
    lower = min(lower, floor)
    upper = max(pos[-1], lower)
    for t in sorted({*pos, *neg}):
        above = [a for s, a in zip(scores, answerable, strict=True) if s >= t]
        if t >= lower and above and sum(above) / len(above) >= direct_precision:
            upper = t
            break
    # Rounded down: a band rounded up past the score it was placed at would turn that question away.
    bands = Bands(math.floor(lower * 1e4) / 1e4, math.floor(max(upper, lower) * 1e4) / 1e4)
    tradeoff = [
        {"threshold": round(t, 4), "answered": share(pos, t, True), "abstained": share(neg, t, False)}
        for t in sorted({*pos, *neg, bands.lower, bands.upper})
    ]
    return BandFit(
        bands=bands,
        answerable=len(pos),
        unanswerable=len(neg),
        answered_share=share(pos, bands.lower, True),
        abstained_share=share(neg, bands.lower, False),
        direct_share=share(pos, bands.upper, True),
        tradeoff=tradeoff,
    )
