"""Golden question sets and the scoring rules of `../shared/golden/README.md`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class GoldenQuestion:
    id: str
    question: str
    lang: str
    type: str
    expected: str  # "answer", "abstain" or "clarify"
    pages: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)


def load_golden(path: Path) -> list[GoldenQuestion]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
        names = GoldenQuestion.__dataclass_fields__
        questions.append(GoldenQuestion(**{k: v for k, v in row.items() if k in names}))
    return questions


def normalise(text: str) -> str:
    """Lowercase, delete ` and *, collapse white space (the README's rule, applied to both sides)."""
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", text.lower())).strip()


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
