"""The retrieval smoke check before activation: evidence@5 of the shadow version on a golden file, against
the active version's when the two are comparable (same embedding fingerprint and strategy)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog

from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.registry import IndexVersion
from pipelines.documents import Chunk
from pipelines.golden_sets import GoldenQuestion
from pipelines.ingestion import index_checks
from pipelines.ingestion.build import BuildRequest
from pipelines.ports import StoreUnavailable, VectorIndex
from pipelines.profiles import Stores
from pipelines.retrieval.fusion import reciprocal_rank_fusion
from pipelines.settings import Settings
from pipelines.text import analysis
from pipelines.text.language import detect_question_language

log = structlog.get_logger(__name__)


def hybrid_search(
    index: VectorIndex, request: BuildRequest, strategy: str, languages: Sequence[str], limit: int = 10
) -> Callable[[str], list[Chunk]]:
    """Dense + BM25 fused by reciprocal rank over the whole index (`languages`: the version's), the
    question analysed in the index's language, or its own when the index holds several."""
    embedder = load_embedder(request.embedding_model)

    def search(question: str) -> list[Chunk]:
        dense = index.dense_search(embedder.embed_query(question), 30, strategy=strategy)
        language = languages[0] if len(languages) == 1 else detect_question_language(question).language
        vector = analysis.query_vector(question, request.bm25_analyzer, language)
        sparse = index.sparse_search(vector, 30, strategy=strategy)
        by_id = {h.chunk.chunk_id: h.chunk for h in [*dense, *sparse]}
        fused = reciprocal_rank_fusion([[h.chunk.chunk_id for h in dense], [h.chunk.chunk_id for h in sparse]])
        return [by_id[chunk_id] for chunk_id, _ in fused[:limit]]

    return search


def smoke_strategy(request: BuildRequest, query_strategy: str) -> str:
    """The strategy the smoke check queries: the query-time one when built, else the first built."""
    return query_strategy if query_strategy in request.strategies else request.strategies[0]


def retrieval_smoke_check(
    stores: Stores, settings: Settings, request: BuildRequest, shadow: IndexVersion, document_ids: list[str]
) -> dict[str, Any]:
    """evidence@5 of the shadow version on the golden file against the active version's (when comparable)."""
    golden = settings.golden_file
    questions = index_checks.load_smoke_questions(golden, document_ids) if golden is not None else []
    strategy = smoke_strategy(request, settings.chunk_strategy)
    opened: list[VectorIndex] = []
    try:
        shadow_index = stores.open_index(shadow.location)
        opened.append(shadow_index)
        shadow_search = hybrid_search(shadow_index, request, strategy, shadow.languages)
        active_search = None
        active = stores.registry.active()
        if questions and active is not None and active.version == shadow.version:
            # A forced rebuild of the live version: it may not score below what the live one recorded.
            reason = "the live version's recorded score (this is a forced rebuild of it)"
            compared = _smoke_against_recorded(golden, questions, shadow_search, strategy, settings, active, reason)
            if compared is not None:
                return compared
        if (
            questions
            and active is not None
            and active.version != shadow.version
            and active.fingerprint == shadow.fingerprint
            and strategy in active.strategies
        ):
            try:
                active_index = stores.open_index(active.location)
                opened.append(active_index)
                active_search = hybrid_search(active_index, request, strategy, active.languages)
            except StoreUnavailable as exc:
                # A server holding the active shard open locks it (Qdrant Edge's WAL): compare with the
                # score the active version recorded when it was checked, on the same golden file.
                log.info("smoke_active_index_busy", version=active.version, error=str(exc))
                reason = "the active version's recorded score (its shard is open elsewhere)"
                compared = _smoke_against_recorded(golden, questions, shadow_search, strategy, settings, active, reason)
                if compared is not None:
                    return compared
        result = index_checks.retrieval_smoke(golden, questions, shadow_search, active_search, settings.smoke_margin)
    finally:
        for index in opened:
            index.close()
    return {**result, "strategy": strategy}


def _smoke_against_recorded(
    golden: Path | None,
    questions: list[GoldenQuestion],
    search: Callable[[str], list[Chunk]],
    strategy: str,
    settings: Settings,
    active: IndexVersion,
    reason: str,
) -> dict[str, Any] | None:
    """The smoke check against the score the active version recorded on the same golden file and
    strategy; None when it recorded none to compare with."""
    recorded = active.checks.get("retrieval_smoke", {})
    if recorded.get("golden") != str(golden) or recorded.get("strategy") != strategy:
        return None
    result = index_checks.retrieval_smoke(golden, questions, search, None, settings.smoke_margin)
    active_score = recorded.get("evidence@5")
    if isinstance(active_score, int | float) and "evidence@5" in result:
        result["active_evidence@5"] = active_score
        result["passed"] = result["evidence@5"] >= active_score - settings.smoke_margin
        result["compared_with"] = reason
    return {**result, "strategy": strategy}
