"""Coverage node: does the corpus mention what the question is about (pipelines/answering/coverage.py)?

A question naming something no chunk contains, or most of whose words appear nowhere in the index,
gets `no_answer` with the terms that were missing, whatever the dense scores say. And breadth
(pipelines/answering/breadth.py): a question whose one subject word is on most pages gets `clarify`.
"""

from __future__ import annotations

from collections.abc import Callable

from hamilton.function_modifiers import config

from pipelines.answering.breadth import Breadth, assess_bare_topic, assess_breadth
from pipelines.answering.coverage import Coverage, assess
from pipelines.caching.built_once import BuiltOnce
from pipelines.retrieval.retriever import RetrievalPlan
from pipelines.retrieval.vocabulary import index_holds
from pipelines.text.analysis import SparseVector, analyzer, term_index
from pipelines.text.language import LanguageGuess
from query_graph.nodes.retrieval import Candidate


@config.when(coverage="vocabulary")
def question_coverage__vocabulary(
    question: str, guardrail_language: LanguageGuess, retrieval_plan: RetrievalPlan, coverage_names: str = "asked"
) -> Coverage:
    """One single-term sparse lookup per distinct term and lane, in the same strategy as retrieval: a term
    is known when any lane the question is searched in holds it (an English-only name asked about in
    Spanish is found by the English lane). `coverage_names` (graph config): the names rule for the sentences that
    ask (`asked`), for every sentence (`on`), or not at all (`off`)."""

    plan = retrieval_plan
    analyze = analyzer(plan.bm25_analyzer)

    def contains(term: str) -> bool:
        return any(
            index_holds(
                plan.vector_index,
                plan.index_version,
                plan.strategy,
                lane.language,
                lane.analysis_language,
                analyze,
                term,
            )
            for lane in plan.lanes
        )

    return assess(
        question,
        guardrail_language.language,
        contains,
        names=coverage_names != "off",
        asked_only=coverage_names == "asked",
    )


@config.when(coverage="off")
def question_coverage__off() -> Coverage:
    return Coverage(True, None)


@config.when(breadth="common_word")
def question_breadth__common_word(
    question: str, guardrail_language: LanguageGuess, retrieval_plan: RetrievalPlan
) -> Breadth:
    """The share of pages holding the question's one content term, in the question's own lane (the first)."""
    terms_of, pages_holding = _own_lane_counts(retrieval_plan)
    return assess_breadth(question, guardrail_language.language, terms_of, pages_holding)


def _own_lane_counts(
    plan: RetrievalPlan,
) -> tuple[Callable[[str], list[str]], Callable[[str], tuple[int, int]]]:
    """A word as the index's analyzer writes it, and (pages holding a term, pages), both in the question's own lane
    (the first)."""
    lane = plan.lanes[0]
    analyze = analyzer(plan.bm25_analyzer)

    def terms_of(word: str) -> list[str]:
        return analyze(word, lane.analysis_language)

    def pages_holding(term: str) -> tuple[int, int]:
        return _pages_holding(plan, lane.language, term)

    return terms_of, pages_holding


@config.when(breadth="bare_topic")
def question_breadth__bare_topic(question: str, reranked_candidates: list[Candidate]) -> Breadth:
    """A question that is only a short topic is asked back, offering the sections of the best passages (their
    page title and heading) as examples of what the documents say about it."""
    return assess_bare_topic(question, _sections(reranked_candidates))


@config.when(breadth="bare_common_topic")
def question_breadth__bare_common_topic(
    question: str, reranked_candidates: list[Candidate], retrieval_plan: RetrievalPlan
) -> Breadth:
    """`bare_topic` for a topic whose every content term is on a large share of the pages (in the question's own
    lane, as `common_word` counts them): a rare topic points at its few pages and is answered."""
    terms_of, pages_holding = _own_lane_counts(retrieval_plan)
    return assess_bare_topic(question, _sections(reranked_candidates), terms_of=terms_of, pages_holding=pages_holding)


def _sections(candidates: list[Candidate]) -> list[str]:
    """Each passage's page title and its own heading ("Querying > Upsert"), best first."""
    return [" > ".join(dict.fromkeys([c.chunk.title, *c.chunk.heading_path[-1:]])) for c in candidates]


@config.when(breadth="off")
def question_breadth__off() -> Breadth:
    return Breadth(False)


def _pages_holding(plan: RetrievalPlan, language: str | None, term: str) -> tuple[int, int]:
    """(pages holding the term, pages) in the caller's view of the index, in one lane's language; both remembered
    per index version (the view's first question costs a scroll of the lane's chunks)."""
    view = (plan.index_version, plan.vector_index.access_key, plan.strategy, language)
    total_pages, total_chunks = _VIEW_PAGES.get(view, lambda: _view_pages(plan, language))
    if not total_pages:
        return 0, 0
    return _TERM_PAGES.get((*view, term), lambda: _term_pages(plan, language, term, total_chunks)), total_pages


def _view_pages(plan: RetrievalPlan, language: str | None) -> tuple[int, int]:
    chunks = plan.vector_index.scroll_chunks(plan.strategy, language)
    return len({c.document_id for c in chunks}), len(chunks)


def _term_pages(plan: RetrievalPlan, language: str | None, term: str, total_chunks: int) -> int:
    probe = SparseVector([term_index(term)], [1.0])
    hits = plan.vector_index.sparse_search(probe, max(1, total_chunks), plan.strategy, language)
    return len({h.chunk.document_id for h in hits})


# (index version, access key, strategy, language) -> (pages, chunks) of that view; with a term: pages holding it.
_VIEW_PAGES: BuiltOnce[tuple[str, str, str | None, str | None], tuple[int, int]] = BuiltOnce(64)
_TERM_PAGES: BuiltOnce[tuple[str, str, str | None, str | None, str], int] = BuiltOnce(4096)
