"""Pseudo-relevance feedback for the BM25 search of a hybrid retrieval (RM3-like query expansion).

A question and the passage that answers it often share few words: "keep a password out of the
output" against "mark the variable as masked so that its value is redacted". The dense retriever bridges such a gap, BM25 cannot. Feedback lets the dense ranking teach
BM25 the passages' vocabulary: the words that weigh most in the dense search's top `docs` chunks (their
share of the chunk's terms times the index's IDF) join the question's own terms at a fraction `weight`
of theirs, and BM25 searches once, with that query. A chunk only the dense retriever found then gets a
BM25 score of its own, and chunks that share the answer's vocabulary rise in the BM25 list.

The dense top chunks, not the first fused ones: taking them from a first fusion needs a first BM25
search, and the two searches cost 1.8 ms a question where the whole hybrid retrieval is 9 ms (the 1.5x
retrieval/embedding target); on SciFact train the two sources were within noise (0.7685 and 0.7703).
The term statistics are the in-memory BM25 engine's (pipelines/retrieval/bm25.py): per chunk term counts
and IDF over the index's chunks, built once per index version. Chosen on SciFact train (docs/decisions/bm25-feedback.md):
3 chunks, 20 terms, weight 0.2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.settings import Settings
from pipelines.text.analysis import analyzer


@dataclass(frozen=True)
class Feedback:
    """How a hybrid retrieval expands its BM25 query: the top `docs` dense chunks' `terms` heaviest terms
    at up to `weight`; `docs` 0: off. One value for the query graph, the evaluations and the benchmark."""

    docs: int = 0
    terms: int = 20
    weight: float = 0.2

    @classmethod
    def from_settings(cls, settings: Settings, on: bool | None = None) -> Feedback:
        """The settings' feedback; `on` overrides whether it runs (a variant, a benchmark's comparison)."""
        on = settings.bm25_feedback == "on" if on is None else on
        return cls(
            settings.bm25_feedback_docs if on else 0, settings.bm25_feedback_terms, settings.bm25_feedback_weight
        )

    @property
    def on(self) -> bool:
        return self.docs > 0

    def label(self) -> str:
        """ "off" or "<docs> docs, <terms> terms x <weight>", as the evaluation reports record it."""
        return f"{self.docs} docs, {self.terms} terms x {self.weight}" if self.on else "off"

    def weights(
        self, question: str, ranked_keys: Sequence[str], engine: MemoryBM25, language: str | None
    ) -> dict[str, float]:
        """The expanded query of `question` from the first `docs` of `ranked_keys` (the dense hits, best first)."""
        return expanded_query(question, ranked_keys[: self.docs], engine, language, self.terms, self.weight)


def expansion_terms(
    question_terms: set[str], feedback: Sequence[Mapping[str, float]], count: int
) -> list[tuple[str, float]]:
    """The `count` terms, not in the question, that weigh most in the feedback chunks: each chunk gives a
    term its share of the chunk's terms times its IDF (MemoryBM25.term_weights); summed over the chunks,
    best first (ties: the first seen)."""
    scores: dict[str, float] = {}
    for weights in feedback:
        for term, weight in weights.items():
            if term not in question_terms:
                scores[term] = scores.get(term, 0.0) + weight
    ranked = sorted(scores.items(), key=lambda item: -item[1])[:count]  # stable: ties keep first-seen order
    return [(term, score) for term, score in ranked if score > 0]


def weighted_query(question_terms: set[str], expansion: Sequence[tuple[str, float]], weight: float) -> dict[str, float]:
    """Term -> query weight: 1 for the question's own terms; an expansion term `weight` times its score
    relative to the best expansion term's, so no added word counts as much as one the user wrote."""
    weights = dict.fromkeys(sorted(question_terms), 1.0)
    if expansion:
        best = expansion[0][1]
        for term, score in expansion:
            weights[term] = max(weights.get(term, 0.0), weight * score / best)
    return weights


def expanded_query(
    question: str, feedback_keys: Sequence[str], engine: MemoryBM25, language: str | None, terms: int, weight: float
) -> dict[str, float]:
    """The weighted BM25 query of `question` expanded by the chunks `feedback_keys` (best first), with the
    engine's analyzer, term counts and IDF."""
    question_terms = set(analyzer(engine.analyzer_name)(question, language))
    feedback = [engine.term_weights(key) for key in feedback_keys]
    return weighted_query(question_terms, expansion_terms(question_terms, feedback, terms), weight)
