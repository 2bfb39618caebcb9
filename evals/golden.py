"""Golden question sets and the scoring rules of `../shared/golden/README.md`."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.golden_sets import HALVES, GoldenQuestion, half_of, load_golden, normalise, split_halves

__all__ = [
    "HALF_CHOICES",
    "HALVES",
    "GoldenQuestion",
    "evidence_at",
    "evidence_rank",
    "half_of",
    "halves_run",
    "load_golden",
    "normalise",
    "page_at",
    "reciprocal_rank",
    "restrict_to_half",
    "split_halves",
]

# `--half` of `ragline eval retrieval|answers|ab`: one half of the held-out protocol's split, or both.
HALF_CHOICES = (*HALVES, "all")


def restrict_to_half(questions: Sequence[GoldenQuestion], half: str) -> list[GoldenQuestion]:
    """The questions of one half (`tuning`, `held_out`), or all of them (`all`), in their order."""
    if half not in HALF_CHOICES:
        raise ValueError(f"unknown half {half!r}; expected one of {', '.join(HALF_CHOICES)}")
    return list(questions) if half == "all" else [q for q in questions if half_of(q.id) == half]


def halves_run(half: str) -> tuple[str, ...]:
    """The halves a run restricted to `half` reports beside its figures over every question it ran."""
    return HALVES if half == "all" else (half,)


def evidence_rank(evidence: Sequence[str], ranked_texts: Sequence[str], k: int = 10) -> int | None:
    """The rank (from 1) at which the last evidence string was covered within the top k, or None."""
    wanted = [normalise(e) for e in evidence]
    if not wanted:
        return None
    seen: set[int] = set()
    for rank, text in enumerate(ranked_texts[:k], start=1):
        norm = normalise(text)
        seen.update(i for i, e in enumerate(wanted) if e in norm)
        if len(seen) == len(wanted):
            return rank
    return None


def evidence_at(evidence: Sequence[str], ranked_texts: Sequence[str], k: int) -> bool:
    rank = evidence_rank(evidence, ranked_texts, k)
    return rank is not None and rank <= k


def page_at(pages: Sequence[str], ranked_documents: Sequence[str], k: int) -> bool:
    return bool(set(pages) & set(ranked_documents[:k]))


def reciprocal_rank(evidence: Sequence[str], ranked_texts: Sequence[str], k: int = 10) -> float:
    rank = evidence_rank(evidence, ranked_texts, k)
    return 1.0 / rank if rank else 0.0
