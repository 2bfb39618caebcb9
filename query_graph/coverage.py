"""Coverage node: does the corpus mention what the question is about (pipelines/coverage.py)?

A question naming something no chunk contains, or most of whose words appear nowhere in the index,
gets `no_answer` with the terms that were missing, whatever the dense scores say.
"""

from __future__ import annotations

from functools import cache

from hamilton.function_modifiers import config

from pipelines.bm25 import SparseVector, term_index
from pipelines.coverage import Coverage, assess
from pipelines.guardrails import LanguageGuess
from query_graph.retrieval import RetrievalPlan


@config.when(coverage="vocabulary")
def question_coverage__vocabulary(
    question: str, guardrail_language: LanguageGuess, retrieval_plan: RetrievalPlan
) -> Coverage:
    """One single-term sparse lookup per distinct term, in the same strategy and language as retrieval."""

    @cache
    def contains(term: str) -> bool:
        probe = SparseVector([term_index(term)], [1.0])
        plan = retrieval_plan
        return bool(plan.vector_index.sparse_search(probe, 1, plan.strategy, plan.language))

    return assess(question, guardrail_language.language, contains)


@config.when(coverage="off")
def question_coverage__off() -> Coverage:
    return Coverage(True, None)
