"""QueryService: runs the query DAG for one question, in two phases.

The front phase runs first, stage by stage (guardrails and clarify, exact cache, query embedding and
topic gate, semantic cache: `query_graph/front.py`); a refusal, a clarification, a cache hit or an
off-topic question ends the request there, so it never touches retrieval or generation. Only the rest
execute the answer phase. Errors carry an HTTP status and a code: infrastructure failures are 503s,
never a fake `no_answer`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import structlog

from pipelines.access import EVERYTHING, Access
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.redis_cache import CacheUnavailable
from pipelines.adapters.registry import IndexVersion
from pipelines.deadline import deadline_in
from pipelines.ports import StoreUnavailable, VectorIndex
from pipelines.profiles import Stores
from pipelines.retrieval.language_lanes import lexical_languages
from pipelines.retrieval.rerank import probability
from pipelines.retrieval.retriever import Candidate
from pipelines.settings import Settings
from pipelines.text.analysis import Analyzer
from pipelines.text.followups import Turn
from pipelines.text.language import SpokenLanguage
from query_graph.active_index import ActiveIndex, FingerprintMismatch, NoActiveIndex, VectorStoreUnavailable
from query_graph.back_half import BackHalf, failure
from query_graph.front import FRONT_STAGES, FrontHalf
from query_graph.nodes.reply import _retrieved_entry as linked_entry
from query_graph.timing import current_timings, request_started

log = structlog.get_logger(__name__)

FRONT_NODES = [node for stage in FRONT_STAGES for node in stage]  # called stage by stage by FrontHalf.run
ANSWER_NODES = ["reply"]
# Retrieval without an answer (/v1/search): the same graph up to the reranked top_k, and the words the
# reply node reads sections with (to link each passage to its section as `retrieved` does).
SEARCH_NODES = ["reranked_candidates", "answer_words"]
RETRIEVAL_PROFILE = "hybrid-rrf"


class QueryFailed(RuntimeError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class QueryOptions:
    top_k: int
    strategy: str


class QueryService:
    def __init__(self, settings: Settings, stores: Stores) -> None:
        self.settings, self.stores = settings, stores
        self.embedder = load_embedder(settings.embedding_model)
        # Guardrails, caches, topic gate; its settings carry the calibrated thresholds (CRAG bands too).
        registry = stores.registry
        self.front = FrontHalf(
            settings, self.embedder, self.embedder.fingerprint.digest, stores.cache, (registry.dsn, registry.schema)
        )
        self.settings = settings = self.front.settings
        self.back = BackHalf(settings)  # variants, one driver per variant combination, their clients
        self.driver = self.back.driver(self.back.defaults)
        self.indexes = ActiveIndex(
            stores.registry,
            stores.open_index,
            self.embedder.fingerprint.digest,
            settings.registry_poll_seconds,
            released=stores.released,  # a replaced shard this process closes is dropped
        )

    def active(self, access: Access = EVERYTHING) -> tuple[IndexVersion, VectorIndex]:
        """The active index as `access` may read it (`visible_index`), or a 503-worthy failure saying why there
        is none to use."""
        try:
            version, index = self.indexes.current()
        except (NoActiveIndex, FingerprintMismatch, StoreUnavailable) as exc:
            raise QueryFailed(503, _code(exc), str(exc)) from exc
        return version, visible_index(version, index, access)

    def warm(self) -> None:
        """Build at start-up what the first question would otherwise wait for: the active index's BM25
        term statistics, which BM25 feedback and the bridge hop read (1-3 s over 2,000 chunks). A version
        activated later builds them on its first question. No index yet: nothing to warm, the first query
        says why."""
        s = self.settings
        bm25 = s.bm25_feedback == "on" or s.bridge_hop == "on" or s.bm25_engine == "memory"
        if not bm25 and s.dense_sentences == "off":
            return
        try:
            version, index = self.indexes.current()
        except (NoActiveIndex, FingerprintMismatch, StoreUnavailable):
            return
        analyzer = version.chunk_settings.get("bm25_analyzer", "plain")
        for language in lexical_languages(s.language_route, version.languages, s.language_filter) if bm25 else ():
            self.back.bm25_memory.engine(version.version, index, s.chunk_strategy, language, analyzer)
        if s.dense_sentences != "off":  # the table of sentence vectors dense search reads (`dense_sentences`)
            self.back.sentence_units.source(version.version, index, s.chunk_strategy, self.embedder)(None)

    def check_ready(self) -> dict[str, Any]:
        """Fail unless an index is active and built with this server's embedder (start-up check)."""
        version, index = self.active()
        return {
            "content_version": version.version,
            "embedding_fingerprint": version.fingerprint,
            "points": index.count(),
        }

    def variant_options(self) -> dict[str, list[str]]:
        """{node: [variant, ...]}: what `answer(variants=...)` accepts."""
        return self.back.variant_options()

    def answer(
        self,
        question: str,
        top_k: int | None = None,
        overrides: dict[str, Any] | None = None,
        variants: dict[str, str] | None = None,
        language: str | None = None,
        language_probability: float | None = None,
        history: Sequence[Turn] = (),
        access: Access = EVERYTHING,
    ) -> dict[str, Any]:
        """`language` (ISO code) is the language the question was spoken in, with the transcriber's
        `language_probability`: the language gate judges it instead of the words when it is sure enough
        (pipelines/guardrails/screen.py `question_language`). `history`: the conversation's earlier turns,
        oldest first; the question is then made standalone first (node `standalone_question`) and the rest
        of the graph answers that. The reply's `standalone_question` says what was answered. `access`: the
        caller's groups; retrieval, caches, topic gate and coverage see only the pages they may read. The
        default, every page, is the operator's (command line, evaluations); the server passes each request's
        token's groups (`server.deps.caller_access`)."""
        started = time.perf_counter()
        with _request_timings(started) as timings, deadline_in(self.settings.request_timeout_seconds):
            chosen, graph = self._graph_for(variants)
            version, index = self.active(access)
            spoken = SpokenLanguage(language, language_probability) if language else None
            try:
                inputs = self.graph_inputs(question, top_k, chosen, version, index, spoken, access)
                standalone = self._standalone(graph, inputs, history)
                inputs["question"] = standalone
                front = self.front.run(inputs, overrides)  # stops at a refusal, clarify, hit or gate
            except Exception as exc:
                _raise_back_failure(exc)
                raise
            if front.early is not None:
                result = front.early
                result.setdefault(
                    "index", {"content_version": version.version, "embedding_fingerprint": version.fingerprint}
                )
            else:
                try:
                    out = graph.execute(ANSWER_NODES, inputs=inputs, overrides={**(overrides or {}), **front.values})
                except Exception as exc:
                    _raise_back_failure(exc)
                    raise
                result = {**out["reply"], **front.details(), "variants": chosen}
                result["index"] = {"content_version": version.version, "embedding_fingerprint": version.fingerprint}
                if front.cache_status == "miss":
                    self._store(front.values["exact_cache_key"], result)
                    self.front.remember(front, result)
        timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        result["timings_ms"] = timings
        result["standalone_question"] = standalone
        log.info(
            "query_answered",
            status=result["status"],
            cache=result["cache"],
            timings_ms=timings,
            version=result["index"]["content_version"],
        )
        return result

    def search(
        self,
        question: str,
        top_k: int | None = None,
        variants: dict[str, str] | None = None,
        language: str | None = None,
        access: Access = EVERYTHING,
    ) -> dict[str, Any]:
        """Ranked passages for a search box: the guardrail stage, then the query graph's retrieval (the
        request's variants: fusion, feedback, bridge hop, rerank) up to its top_k, and nothing after it:
        no cache, topic gate, CRAG, generation or verification. A refused query gets no passages. Only the
        pages `access` may read are searched."""
        started = time.perf_counter()
        with _request_timings(started) as timings, deadline_in(self.settings.request_timeout_seconds):
            chosen, graph = self._graph_for(variants)
            version, index = self.active(access)
            spoken = SpokenLanguage(language, None) if language else None
            try:
                inputs = self.graph_inputs(question, top_k, chosen, version, index, spoken, access)
                screened = self.front.screen(inputs)
                verdict = screened["guardrail_verdict"]
                out = None
                if verdict.allowed:
                    out = graph.execute(SEARCH_NODES, inputs=inputs, overrides=screened)
            except Exception as exc:
                _raise_back_failure(exc)
                raise
        result: dict[str, Any] = {"status": "ok" if verdict.allowed else "refused"}
        if out is None:
            result["message"], result["passages"] = verdict.message, []
        else:
            words = out["answer_words"]
            ranked = enumerate(out["reranked_candidates"], start=1)
            result["passages"] = [search_passage(c, rank, question, words) for rank, c in ranked]
        result["guardrail"] = verdict.as_reply()
        result["index"] = {"content_version": version.version, "embedding_fingerprint": version.fingerprint}
        result["variants"] = chosen
        timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        result["timings_ms"] = timings
        log.info("search_answered", status=result["status"], passages=len(result["passages"]), timings_ms=timings)
        return result

    @staticmethod
    def _standalone(graph: Any, inputs: dict[str, Any], history: Sequence[Turn]) -> str:
        """The question the rest of the graph answers: as asked without history, else the `standalone_question`
        node's (run alone through the request's driver, so it is timed and its variant is the request's)."""
        if not history:
            return str(inputs["question"])
        out = graph.execute(["standalone_question"], inputs={**inputs, "conversation_history": list(history)})
        return str(out["standalone_question"])

    def _graph_for(self, variants: dict[str, str] | None) -> tuple[dict[str, str], Any]:
        """The request's variants and the driver built for them; a bad variant is a QueryFailed (400)."""
        try:
            chosen = self.back.variants(variants)
            return chosen, self.back.driver(chosen)
        except Exception as exc:
            _raise_back_failure(exc)
            raise

    def graph_inputs(
        self,
        question: str,
        top_k: int | None,
        chosen: dict[str, str],
        version: IndexVersion,
        index: VectorIndex,
        spoken_language: SpokenLanguage | None = None,
        access: Access = EVERYTHING,
    ) -> dict[str, Any]:
        """The inputs of the query graph for one question (front and answer phase alike); `index` is the
        caller's view of the active index (`active(access)`), `access` keeps its cache entries apart."""
        s, k = self.settings, top_k or self.settings.top_k
        inputs: dict[str, Any] = {
            "question": question,
            "embedder": self.embedder,
            "vector_index": index,
            "cache": self.stores.cache,
            "candidates": s.candidates,
            "strategy": s.chunk_strategy,
            "rrf_k": s.rrf_k,
            "top_k": k,
            "answer_sentences": s.answer_sentences,
            "min_answer_score": s.min_answer_score,
            "index_version": version.version,
            "index_fingerprint": version.fingerprint,
            "bm25_analyzer": version.chunk_settings.get("bm25_analyzer", "plain"),
            "retrieval_profile": f"{RETRIEVAL_PROFILE}-k{k}",
            "prompt_version": s.prompt_version,
            "generator_model": s.generator_model,
            "answer_max_tokens": s.answer_max_tokens,
            "cache_prefix": s.cache_prefix,
            "spoken_language": spoken_language,
            "access_key": access.key,
        }
        inputs.update(self.back.inputs(chosen, k))
        inputs.update(self.front.inputs(version, index))
        return inputs

    def _store(self, key: str, result: dict[str, Any]) -> None:
        try:
            self.stores.cache.set(
                key, {k: v for k, v in result.items() if k != "cache"}, self.settings.cache_ttl_seconds
            )
        except CacheUnavailable as exc:
            log.warning("cache_store_failed", error=str(exc))


def visible_index(version: IndexVersion, index: VectorIndex, access: Access) -> VectorIndex:
    """The index as a caller of `access` may read it: filtered by its groups in every store query. A version
    built before access groups existed (no `access` in its chunk settings) holds public pages only, and a caller
    in every group the version's pages hold (the public caller of an all-public index) may read it all: no
    filter for either."""
    recorded = version.chunk_settings.get("access")
    if access.unrestricted or recorded is None:
        return index
    held = recorded.get("groups")
    if held is not None and access.groups is not None and set(held) <= access.groups:
        return index
    return index.restricted(access)


def search_passage(candidate: Candidate, rank: int, question: str, words: Analyzer) -> dict[str, Any]:
    """One search result: the chunk linked to its section as the reply's `retrieved` links it, its text,
    its rank and `score`, the score it was ranked by (the reranker's probability when one ran, else the
    fused score), with the scores behind it."""
    linked = linked_entry(candidate, None, question, words)
    score = candidate.fused_score if candidate.rerank_score is None else probability(candidate.rerank_score)
    return {
        "rank": rank,
        "chunk_id": linked["chunk_id"],
        "document_id": linked["document_id"],
        "title": linked["title"],
        "heading_path": list(linked["heading_path"]),  # type: ignore[call-overload]
        "anchor": linked["anchor"],
        "source_uri": linked["source_uri"],
        "language": linked["language"],
        "text": candidate.chunk.text,
        "score": round(score, 6),
        "scores": {k: linked.get(k) for k in ("fused_score", "dense_score", "bm25_score", "rerank_score")},
    }


@contextmanager
def _request_timings(started: float) -> Iterator[dict[str, float]]:
    """The request's node timings, collected by the graph's timer while the block runs (`query_graph.timing`)."""
    timings: dict[str, float] = {}
    token = current_timings.set(timings)
    began = request_started.set(started)
    try:
        yield timings
    finally:
        current_timings.reset(token)
        request_started.reset(began)


def _raise_back_failure(exc: Exception) -> None:
    """Re-raise a back-half failure (bad variant, store, reranker, generator, citations) as a QueryFailed."""
    mapped = failure(exc)
    if mapped is not None:
        raise QueryFailed(mapped[0], mapped[1], str(exc)) from exc


def _code(exc: Exception) -> str:
    if isinstance(exc, NoActiveIndex):
        return "no_active_index"
    if isinstance(exc, FingerprintMismatch):
        return "index_fingerprint_mismatch"
    if isinstance(exc, VectorStoreUnavailable):
        return "retrieval_unavailable"
    return "registry_unavailable"
