"""The retrieval smoke check before activation: evidence@5 of the shadow version on a golden file, against
the active version's when the two are comparable (same embedding fingerprint and strategy).

Each version is searched as the server would search it with the settings' default variants
(pipelines/retrieval/retriever.py `ServedRetrieval`: its fusion, BM25 feedback, bridge hop, distinct
passages and rerank, the version's own BM25 analyzer and languages), so the score that decides activation is
the retrieval users get."""

from __future__ import annotations

from collections.abc import Callable
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
from pipelines.retrieval.retriever import ServedRetrieval, served_profile
from pipelines.retrieval.sentence_units import SentenceTexts, SentenceUnitsCache
from pipelines.settings import Settings

log = structlog.get_logger(__name__)


def served_search(
    index: VectorIndex,
    version: IndexVersion,
    settings: Settings,
    request: BuildRequest,
    strategy: str,
    sentence_texts: SentenceTexts,
) -> Callable[[str], list[Chunk]]:
    """The ranked chunks the served default retrieves from `version` (opened as `index`) for a question:
    the query graph's `reranked_candidates` with the settings' variants, embedded with the build's model.
    `sentence_texts`: a chunk's sentences as the build embedded them (`dense_sentences`; the answering layer's
    `own_shown_texts`, which this layer may not import)."""
    units = SentenceUnitsCache(settings.data_dir, sentence_texts)
    embedder = load_embedder(request.embedding_model)
    return ServedRetrieval(settings, embedder, index, version, strategy, sentence_units=units).chunks


def smoke_strategy(request: BuildRequest, query_strategy: str) -> str:
    """The strategy the smoke check queries: the query-time one when built, else the first built."""
    return query_strategy if query_strategy in request.strategies else request.strategies[0]


def retrieval_smoke_check(
    stores: Stores,
    settings: Settings,
    request: BuildRequest,
    shadow: IndexVersion,
    document_ids: list[str],
    sentence_texts: SentenceTexts,
) -> dict[str, Any]:
    """evidence@5 of the shadow version on the golden file against the active version's (when comparable)."""
    golden = settings.golden_file
    questions = index_checks.load_smoke_questions(golden, document_ids) if golden is not None else []
    strategy = smoke_strategy(request, settings.chunk_strategy)
    opened: list[VectorIndex] = []
    try:
        shadow_index = stores.open_index(shadow.location)
        opened.append(shadow_index)
        shadow_search = served_search(shadow_index, shadow, settings, request, strategy, sentence_texts)
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
                active_search = served_search(active_index, active, settings, request, strategy, sentence_texts)
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
    return {**result, "strategy": strategy, **_profile(result, settings)}


def _smoke_against_recorded(
    golden: Path | None,
    questions: list[GoldenQuestion],
    search: Callable[[str], list[Chunk]],
    strategy: str,
    settings: Settings,
    active: IndexVersion,
    reason: str,
) -> dict[str, Any] | None:
    """The smoke check against the score the active version recorded on the same golden file, strategy and
    retrieval settings; None when it recorded none to compare with."""
    recorded = active.checks.get("retrieval_smoke", {})
    if (
        recorded.get("golden") != str(golden)
        or recorded.get("strategy") != strategy
        or recorded.get("retrieval") != served_profile(settings)
    ):
        return None
    result = index_checks.retrieval_smoke(golden, questions, search, None, settings.smoke_margin)
    active_score = recorded.get("evidence@5")
    if isinstance(active_score, int | float) and "evidence@5" in result:
        result["active_evidence@5"] = active_score
        result["passed"] = result["evidence@5"] >= active_score - settings.smoke_margin
        result["compared_with"] = reason
    return {**result, "strategy": strategy, **_profile(result, settings)}


def _profile(result: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """The retrieval settings of a check that scored (none for a skipped one)."""
    return {} if "skipped" in result else {"retrieval": served_profile(settings)}
