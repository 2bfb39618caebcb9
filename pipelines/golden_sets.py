"""The golden question-set format of `../shared/golden/README.md` and its normalisation rule.

Here, not in evals/, because ingestion's retrieval smoke check reads the same files; evals/ adds scoring.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class GoldenQuestion:
    id: str
    question: str
    # The README's files carry every field; defaults let a hand-made smoke file name only what it needs.
    lang: str = "en"
    type: str = ""
    expected: str = "answer"  # "answer", "abstain" or "clarify"
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


# The held-out protocol: every golden set splits in two halves by a hash of each question's id, fixed for
# good (a new question lands in a half without moving the others). Tuning decisions read only `tuning`;
# `held_out` is reported beside it and never looked at question by question.
HALVES = ("tuning", "held_out")


def half_of(question_id: str) -> str:
    """The half a question belongs to: the parity of the first byte of the SHA-256 of its id."""
    return HALVES[hashlib.sha256(question_id.encode("utf-8")).digest()[0] % 2]


def split_halves(questions: list[GoldenQuestion]) -> dict[str, list[GoldenQuestion]]:
    halves: dict[str, list[GoldenQuestion]] = {half: [] for half in HALVES}
    for question in questions:
        halves[half_of(question.id)].append(question)
    return halves
