"""What the back half of the query graph (retrieval variants to verification) needs from the service:
the chosen variants, one cached driver per variant combination, the clients those variants use
(loaded once, on first use), and the HTTP status and code of each way it can fail."""

from __future__ import annotations

import ast
import hashlib
import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

from hamilton import driver

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
from pipelines.answering.citations import CitationError
from pipelines.answering.litellm_generator import PROMPT_VERSION
from pipelines.answering.sentence_vectors import own_shown_texts
from pipelines.caching.embeddings import CachedVectors
from pipelines.deadline import DeadlinePassed
from pipelines.ports import StoreUnavailable
from pipelines.retrieval.bm25 import MemoryBM25Cache
from pipelines.retrieval.hubness import HubnessCache
from pipelines.retrieval.rerank import CrossEncoderReranker, RerankUnavailable
from pipelines.retrieval.sentence_units import SentenceUnitsCache
from pipelines.retrieval.translations import OriginalsCache
from pipelines.settings import PROJECT_ROOT, Settings
from query_graph.driver import DriverCache
from query_graph.nodes.verification import VerificationUnavailable
from query_graph.variants import VARIANTS, UnknownVariant, default_variants, resolve_variants


class BackHalf:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.defaults = default_variants(settings)
        self.drivers = DriverCache(settings.variant_drivers_kept)
        code_digest()  # read once here (about half a second), not on the first request
        self.bm25_memory = MemoryBM25Cache()
        self.hubness = HubnessCache(settings.data_dir)
        self.sentence_units = SentenceUnitsCache(settings.data_dir, own_shown_texts)
        self.passage_vectors = CachedVectors(settings.data_dir / "embedding_cache.sqlite")
        self.originals = OriginalsCache()
        self._reranker: CrossEncoderReranker | None = None
        self._harness: LLMHarness | None = None
        self._lock = threading.Lock()

    def variant_options(self) -> dict[str, list[str]]:
        """The nodes a request may choose a variant of (`request_variant_nodes`; all when unset), with their
        variants."""
        allowed = self.settings.request_variant_nodes
        return {node: list(names) for node, names in VARIANTS.items() if allowed is None or node in allowed}

    def variants(self, overrides: dict[str, str] | None) -> dict[str, str]:
        """The request's variants; raises `UnknownVariant` (a 400) naming the valid ones, and for a node
        this deployment does not let requests choose."""
        allowed = self.settings.request_variant_nodes
        if allowed is not None:
            barred = sorted(set(overrides or {}) - set(allowed))
            if barred:
                raise UnknownVariant(
                    f"this server does not let a request choose {', '.join(barred)}; nodes a request may choose: "
                    f"{', '.join(sorted(allowed)) or 'none'} (RAGLINE_REQUEST_VARIANT_NODES)"
                )
        return resolve_variants(self.defaults, overrides)

    def driver(self, variants: dict[str, str]) -> driver.Driver:
        return self.drivers.get(dict(variants))

    def reranker(self) -> CrossEncoderReranker:
        with self._lock:
            if self._reranker is None:
                s = self.settings
                self._reranker = CrossEncoderReranker(s.reranker_model, s.reranker_path, s.rerank_max_tokens)
            return self._reranker

    def harness(self) -> LLMHarness:
        with self._lock:
            if self._harness is None:
                self._harness = LLMHarness.from_settings(self.settings)
            return self._harness

    def inputs(self, variants: dict[str, str], top_k: int) -> dict[str, Any]:
        """Inputs of the back-half nodes; clients only for the variants that use them."""
        s = self.settings
        inputs: dict[str, Any] = {
            "bm25_memory": self.bm25_memory,
            "hubness_cache": self.hubness,
            "sentence_units_cache": self.sentence_units,
            "passage_vectors": self.passage_vectors,
            "originals_cache": self.originals,
            "rerank_depth": s.rerank_depth,
            "fusion_weights": list(s.fusion_weights),
            "bm25_feedback_docs": s.bm25_feedback_docs,
            "bm25_feedback_terms": s.bm25_feedback_terms,
            "bm25_feedback_weight": s.bm25_feedback_weight,
            "bridge_hop_sources": s.bridge_hop_sources,
            "passages_per_page": s.passages_per_page,
            "language_filter": s.language_filter,
            "source_language": s.source_language,
            "neighbours": s.neighbours,
            "crag_lower": s.crag_lower,
            "crag_upper": s.crag_upper,
            "crag_rerank_lower": s.crag_rerank_lower,
            "crag_rerank_upper": s.crag_rerank_upper,
            "verify_min_support": s.verify_min_support,
            "verify_action": s.verify_action,
            # Everything that changes an answer is in the cache namespace (DESIGN.md): the variants and
            # every number that changes which passages are found or which sentences are kept.
            "retrieval_profile": json.dumps(
                {**variants, **answer_settings(s), "top_k": top_k, "code": code_digest()}, sort_keys=True
            ),
        }
        reads_sentences = (
            variants["sentence_ranker"]
            in ("cross_encoder", "cross_encoder_vectors", "cross_encoder_vectors_rank", "asked")
            or variants["answer_gate"] != "off"
        )
        if variants["rerank"] != "none" or reads_sentences:
            inputs["reranker"] = self.reranker()  # RerankUnavailable when its file is missing or altered
        uses_model = (
            variants["follow_up_rewrite"] == "llm"
            or variants["query_expansion"] != "off"
            or variants["sub_queries"] == "model"
        )
        if uses_model or variants["generator"] == "litellm" or variants["verify"] in ("llm", "llm_score"):
            inputs["llm_harness"] = self.harness()
        if variants["generator"] == "litellm" or variants["sub_queries"] == "model":
            inputs["llm_structured_output"] = s.llm_structured_output  # how a reply's JSON schema is sent
        if variants["generator"] == "litellm":
            inputs["prompt_version"] = PROMPT_VERSION
            inputs["generator_model"] = s.llm_model
            inputs["llm_context_chars"] = s.llm_context_chars
        return inputs


ANSWER_SETTINGS = (
    "candidates",
    "rrf_k",
    "fusion_weights",
    "bm25_feedback_docs",
    "bm25_feedback_terms",
    "bm25_feedback_weight",
    "bridge_hop_sources",
    "passages_per_page",
    "rerank_depth",
    "rerank_max_tokens",
    "reranker_model",
    "neighbours",
    "language_filter",
    "source_language",
    "min_answer_score",
    "answer_sentences",
    "verify_min_support",
    "verify_action",
    "llm_context_chars",
)


# The packages whose code turns a question into an answer (the ingestion's changes reach answers through the
# index's content version, which the namespace holds already).
ANSWER_CODE = ("pipelines", "query_graph")


@cache
def code_digest(root: Path = PROJECT_ROOT) -> str:
    """A digest of the logic of every source file of `ANSWER_CODE`: part of the cache namespace, so an upgrade
    of ragline never serves an answer that the old code chose, quoted or checked. It reads each file's syntax
    tree without its docstrings (`_logic`), so a comment, a docstring or a reformatting leaves every cached
    answer in place, and any change of what the code does starts a new namespace. A version constant per rule
    set would have to be raised by hand at each change, and was not for several of them; servers running the
    same code still share their entries."""
    digest = hashlib.sha256()
    for package in ANSWER_CODE:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + _logic(path).encode() + b"\0")
    return digest.hexdigest()[:16]


def _logic(path: Path) -> str:
    """The file's syntax tree, less docstrings, comments and layout (which the parser drops)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def answer_settings(settings: Settings) -> dict[str, Any]:
    """The settings (besides variants and calibration) a cached answer depends on."""
    return {name: getattr(settings, name) for name in ANSWER_SETTINGS}


def failure(exc: BaseException) -> tuple[int, str] | None:
    """(HTTP status, code) of a back-half failure; None for an error that is not one of ours."""
    if isinstance(exc, UnknownVariant):
        return 400, "unknown_variant"
    if isinstance(exc, DeadlinePassed):
        return 504, "request_timeout"
    if isinstance(exc, StoreUnavailable):
        return 503, "retrieval_unavailable"
    if isinstance(exc, RerankUnavailable):
        return 503, "rerank_unavailable"
    if isinstance(exc, GenerationUnavailable):
        return 503, "generation_unavailable"
    if isinstance(exc, VerificationUnavailable):
        return 503, "verification_unavailable"
    if isinstance(exc, CitationError):
        return 502, "invalid_citation"
    return None
