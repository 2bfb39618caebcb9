"""Extractive answers: sentences taken verbatim from the best passages, each cited.

No language model is involved. A sentence is a candidate when it covers enough of the question's
content words (weighted by how rare each word is among the candidate sentences); the answer takes
the best few, in passage order, each followed by the marker of the chunk it came from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.bm25 import analyze
from pipelines.citations import split_sentences
from pipelines.documents import Chunk

# Words that say what kind of question it is, not what it is about.
QUESTION_WORDS = frozenset(
    [
        "which",
        "whats",
        "what's",
        "does",
        "did",
        "should",
        "would",
        "could",
        "there",
        "any",
        "way",
        "tell",
        "explain",
        "use",
        "using",
        "used",
        "set",
        "get",
    ]
)
_FENCE = re.compile(r"(```|~~~).*?(\1|\Z)", re.S)
# Emphasis and code markup, but not the underscores inside identifiers such as RAGLINE_PORT.
_MARKUP = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)|^\s*>+\s?", re.M)


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    chunk_id: str
    rank: int  # rank of its chunk among the candidates, from 1
    position: int
    score: float


def prose_units(text: str) -> list[str]:
    """Sentences of a passage's prose: code blocks and headings are not answers by themselves."""
    text = _FENCE.sub(" ", text)
    units = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.splitlines() if not ln.lstrip().startswith("#")]
        if not lines or all(ln.lstrip().startswith("|") for ln in lines):
            continue
        joined = " ".join(ln.strip().lstrip("-*+ ").strip() for ln in lines)
        joined = _MARKUP.sub("", joined)
        joined = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", joined)  # links keep their text
        units.extend(s for s in split_sentences(joined) if len(s.split()) >= 3)
    return units


def question_terms(question: str) -> list[str]:
    return [t for t in dict.fromkeys(analyze(question)) if t not in QUESTION_WORDS]


def score_sentences(question: str, chunks: Sequence[Chunk]) -> list[ScoredSentence]:
    terms = question_terms(question)
    sentences = [
        (chunk, rank, position, unit, set(analyze(unit)) | set(analyze(" ".join(chunk.heading_path))))
        for rank, chunk in enumerate(chunks, start=1)
        for position, unit in enumerate(prose_units(chunk.generation_text))
    ]
    if not terms or not sentences:
        return []
    total = len(sentences)
    weight = {t: math.log(1 + total / (1 + sum(t in s[4] for s in sentences))) for t in terms}
    norm = sum(weight.values()) or 1.0
    scored = []
    for chunk, rank, position, unit, vocabulary in sentences:
        own = set(analyze(unit))
        # Words in the sentence count fully; words only in its heading count half.
        coverage = sum(weight[t] * (1.0 if t in own else 0.5) for t in terms if t in vocabulary) / norm
        scored.append(ScoredSentence(unit, chunk.chunk_id, rank, position, coverage + 0.05 / rank))
    return scored


def with_marker(sentence: str, chunk_id: str) -> str:
    marker = f" [C:{chunk_id}]"
    stripped = sentence.rstrip()
    if stripped and stripped[-1] in ".!?。！？।॥":
        return stripped[:-1] + marker + stripped[-1]
    return stripped + marker + "."


def extract_answer(
    question: str, chunks: Sequence[Chunk], max_sentences: int = 3, min_score: float = 0.15, passages: int = 5
) -> tuple[str, list[ScoredSentence]]:
    """The cited answer and the sentences it used; an empty answer when nothing covers the question."""
    scored = [s for s in score_sentences(question, chunks[:passages]) if s.score >= min_score]
    best = sorted(scored, key=lambda s: -s.score)[:max_sentences]
    if not best:
        return "", []
    # Keep sentences close in score to the best one, so a weak tail does not dilute the answer.
    best = [s for s in best if s.score >= best[0].score * 0.6]
    ordered = sorted(best, key=lambda s: (s.rank, s.position))
    return " ".join(with_marker(s.text, s.chunk_id) for s in ordered), ordered
