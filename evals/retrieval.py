"""`eval retrieval`: score each retrieval mode on golden questions by the README's rules.

Only `expected == "answer"` questions count. Evidence is matched against what the generator would
see (`Chunk.generation_text`), pages against the chunks' document ids. Every figure is reported over all
the questions run and, beside it, over each half of the held-out protocol's split (`halves`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from evals.golden import HALVES, GoldenQuestion, evidence_at, evidence_rank, half_of, page_at
from evals.stats import latency_summary, mean
from evals.studies.search_modes import SearchSetup, check_modes, run_mode
from pipelines.ports import Embedder

log = structlog.get_logger(__name__)

DEPTH = 10  # the deepest cut-off any retrieval metric reads


@dataclass
class QuestionOutcome:
    """One question under one mode: what was retrieved and how it scored."""

    id: str
    type: str
    evidence_rank: int | None
    page5: bool
    ms: float
    documents: list[str] = field(default_factory=list)

    def hit(self, k: int) -> bool:
        return self.evidence_rank is not None and self.evidence_rank <= k

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.evidence_rank if self.evidence_rank else 0.0


def answerable(questions: Sequence[GoldenQuestion]) -> list[GoldenQuestion]:
    return [q for q in questions if q.expected == "answer"]


def score_question(question: GoldenQuestion, chunks: Sequence[Any], ms: float) -> QuestionOutcome:
    texts = [c.generation_text for c in chunks[:DEPTH]]
    documents = [c.document_id for c in chunks[:DEPTH]]
    rank = evidence_rank(question.evidence, texts, DEPTH)
    assert (rank is not None and rank <= 5) == evidence_at(question.evidence, texts, 5)
    return QuestionOutcome(question.id, question.type, rank, page_at(question.pages, documents, 5), ms, documents)


def summarise(outcomes: Sequence[QuestionOutcome]) -> dict[str, Any]:
    """The contract's per-mode block (a half with no `answer` question: `n` 0 and no figures)."""
    if not outcomes:
        return {"n": 0, **dict.fromkeys(("evidence@1", "evidence@5", "evidence@10", "page@5", "mrr@10"))}
    by_type: dict[str, list[QuestionOutcome]] = defaultdict(list)
    for o in outcomes:
        by_type[o.type].append(o)
    return {
        "n": len(outcomes),
        "evidence@1": round(mean([float(o.hit(1)) for o in outcomes]), 4),
        "evidence@5": round(mean([float(o.hit(5)) for o in outcomes]), 4),
        "evidence@10": round(mean([float(o.hit(10)) for o in outcomes]), 4),
        "page@5": round(mean([float(o.page5) for o in outcomes]), 4),
        "mrr@10": round(mean([o.reciprocal_rank for o in outcomes]), 4),
        "latency_ms": latency_summary([o.ms for o in outcomes]),
        "by_type": {
            t: {"n": len(group), "evidence@5": round(mean([float(o.hit(5)) for o in group]), 4)}
            for t, group in sorted(by_type.items())
        },
        "misses": [o.id for o in outcomes if not o.hit(5)],
        # Where each question's evidence was (null: not in the top 10), and the questions that sit right at
        # evidence@5's cut-off (5th or 6th): evidence@5 can move by these between machines or small changes.
        "evidence_ranks": {o.id: o.evidence_rank for o in outcomes},
        "near_cutoff": [o.id for o in outcomes if o.evidence_rank in (5, 6)],
    }


@dataclass
class RetrievalRun:
    """Per-question outcomes of every mode, kept for A/B statistics; `report()` is the contract JSON."""

    index: dict[str, Any]
    embedding_ms: list[float]
    outcomes: dict[str, list[QuestionOutcome]]
    half: str = "all"  # the `--half` the run was restricted to
    halves: tuple[str, ...] = HALVES  # the halves reported beside the figures over every question run
    expansions: dict[str, str] = field(default_factory=dict)  # `query_expansion=passage`: each question's passage
    expansion_ms: list[float] = field(default_factory=list)  # writing and embedding each passage

    def report(self) -> dict[str, Any]:
        """The contract JSON: `modes` over every question run, `halves` the same blocks per half."""
        return {
            "index": self.index,
            "query_embedding_ms": latency_summary(self.embedding_ms),
            **(
                {"query_expansion_ms": latency_summary(self.expansion_ms), "expansions": self.expansions}
                if self.expansion_ms
                else {}
            ),
            "modes": {mode: summarise(outs) for mode, outs in self.outcomes.items()},
            "half": self.half,
            "halves": {
                half: {
                    "modes": {
                        mode: summarise([o for o in outs if half_of(o.id) == half])
                        for mode, outs in self.outcomes.items()
                    }
                }
                for half in self.halves
            },
        }


def evaluate_retrieval(
    questions: Sequence[GoldenQuestion],
    modes: Sequence[str],
    embedder: Embedder,
    setup: SearchSetup,
    index_info: dict[str, Any],
    half: str = "all",
    halves: tuple[str, ...] = HALVES,
) -> RetrievalRun:
    check_modes(modes, setup)
    chosen = answerable(questions)
    if not chosen:
        raise ValueError("no golden question expects an answer: nothing to score")
    embedding_ms: list[float] = []
    outcomes: dict[str, list[QuestionOutcome]] = {m: [] for m in modes}
    expansions: dict[str, str] = {}
    expansion_ms: list[float] = []
    for number, question in enumerate(chosen, start=1):
        started = time.perf_counter()
        vector = embedder.embed_query(question.question)
        embedding_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()  # `query_expansion=passage`: the model's passage, written once for every mode
        vector, passage = setup.expanded(question.question, vector, embedder)
        if setup.expand is not None:
            expansion_ms.append((time.perf_counter() - started) * 1000)
            expansions[question.id] = passage
        for mode in modes:
            result = run_mode(mode, question.question, vector, setup, DEPTH, passage)
            outcomes[mode].append(score_question(question, result.chunks, result.ms))
        if number % 10 == 0:
            log.info("eval_retrieval_progress", done=number, of=len(chosen))
    return RetrievalRun(index_info, embedding_ms, outcomes, half, halves, expansions, expansion_ms)
