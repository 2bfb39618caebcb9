"""The front of the query graph, run stage by stage so that each early exit skips everything behind it.

    guardrails (+ clarify) -> exact cache -> query embedding + topic gate -> semantic cache -> answer phase

The early exits are control flow, not dataflow: the front calls its node functions (plain functions of
query_graph/nodes/) itself, each argument bound by name as Hamilton binds it (an earlier node's value,
else the graph input of that name, else the parameter's default), each call timed under its node's
name as the driver's `NodeTimer` times it. The graph inputs a stage reads are checked on every run,
with the driver's own check (`port_inputs.accepts`) and Hamilton's error messages. Everything the front
computed is handed to the answer phase (one `driver.execute`) as overrides, so no node runs twice (the
answer phase reuses the query embedding). A refusal or a clarification returns before any cache,
model or store is touched, a cache hit before any model, and an off-topic question after one
embedding and one dot product. Refusals, clarifications and topic-gate abstentions are never cached.

The front nodes are nodes of every driver too (no variant changes them; tests/query_graph/test_front_plan.py
checks that), so the answer phase's graph is the same graph.
"""

from __future__ import annotations

import inspect
import threading
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from pipelines.adapters.redis_cache import CacheUnavailable
from pipelines.adapters.registry import IndexVersion
from pipelines.caching.semantic import (
    SemanticCacheUnavailable,
    SemanticIndex,
    lexical_signature,
    open_semantic_cache,
)
from pipelines.caching.semantic_postgres import PostgresSemanticCache
from pipelines.guardrails.calibration import apply_calibration, warn_if_units_differ
from pipelines.guardrails.screen import Verdict
from pipelines.guardrails.topic_gate import Centroids, GateDecision
from pipelines.guardrails.vagueness import Vagueness, clarifying_question
from pipelines.ingestion import dense_units
from pipelines.ports import Cache, Embedder, VectorIndex
from pipelines.settings import Settings
from query_graph.nodes import cache, gate, guardrails, retrieval
from query_graph.nodes.cache import CacheLookup, SemanticSetup
from query_graph.nodes.gate import TopicSetup
from query_graph.port_inputs import accepts
from query_graph.timing import timed

log = structlog.get_logger(__name__)

NO_ANSWER = "I don't know: the documents do not cover this question."
_RETRY_SHARD_SECONDS = 60.0


@dataclass(frozen=True)
class _Call:
    name: str
    fn: Callable[..., Any]
    params: tuple[str, ...]


@dataclass(frozen=True)
class _Input:
    """A graph input some nodes of a stage read: its types (one per reading parameter), whether any of
    them lacks a default, and which nodes read it."""

    name: str
    types: tuple[Any, ...]
    required: bool
    users: tuple[str, ...]


@dataclass(frozen=True)
class Stage:
    """Front nodes in the order they run; an early exit may follow the last one."""

    calls: tuple[_Call, ...]
    inputs: tuple[_Input, ...]

    @classmethod
    def of(cls, fns: tuple[Callable[..., Any], ...], node_names: frozenset[str]) -> Stage:
        calls, found = [], dict[str, list[tuple[Any, bool, str]]]()
        for fn in fns:
            hints = typing.get_type_hints(fn)
            params = inspect.signature(fn).parameters.values()
            calls.append(_Call(fn.__name__, fn, tuple(p.name for p in params)))
            for p in params:
                if p.name not in node_names:
                    found.setdefault(p.name, []).append((hints[p.name], p.default is p.empty, fn.__name__))
        inputs = tuple(
            _Input(
                name,
                tuple(dict.fromkeys(t for t, _, _ in uses)),
                any(r for _, r, _ in uses),
                tuple(u for _, _, u in uses),
            )
            for name, uses in found.items()
        )
        return cls(tuple(calls), inputs)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.calls)

    def check(self, inputs: Mapping[str, Any], overrides: Mapping[str, Any]) -> None:
        """Hamilton's input check for what this stage reads: present unless optional, of the declared type."""
        errors = []
        for spec in self.inputs:
            if spec.name in overrides:
                continue
            if spec.name not in inputs:
                if spec.required:
                    errors.append(f"Error: Required input {spec.name} not provided for nodes: {list(spec.users)}.")
                continue
            value = inputs[spec.name]
            for t in spec.types:
                if not accepts(t, value):
                    errors.append(
                        f"Error: Type requirement mismatch. Expected {spec.name}:{t} got {value}:{type(value)} instead."
                    )
        if errors:
            errors.sort()
            raise ValueError(f"{len(errors)} errors encountered: \n  " + "\n  ".join(errors))

    def run(self, inputs: Mapping[str, Any], overrides: Mapping[str, Any], values: dict[str, Any]) -> None:
        """Each node's value into `values` (an overridden node's too); arguments by name: an override,
        an earlier node's value, the graph input; none of them (an optional input): the default."""
        self.check(inputs, overrides)
        for call in self.calls:
            if call.name in overrides:
                values[call.name] = overrides[call.name]
                continue
            kwargs = {}
            for p in call.params:
                if p in overrides:
                    kwargs[p] = overrides[p]
                elif p in values:
                    kwargs[p] = values[p]
                elif p in inputs:
                    kwargs[p] = inputs[p]
            values[call.name] = timed(call.name, call.fn, kwargs)


_STAGE_FUNCTIONS: tuple[tuple[Callable[..., Any], ...], ...] = (
    (guardrails.guardrail_language, guardrails.guardrail_verdict, guardrails.vagueness),
    (cache.normalized_question, cache.cache_namespace, cache.exact_cache_key, cache.exact_cache_lookup),
    (retrieval.query_embedding, gate.topic_gate),
    (cache.semantic_namespace, cache.semantic_cache_lookup),
)
_FRONT_NAMES = frozenset(fn.__name__ for stage in _STAGE_FUNCTIONS for fn in stage)
STAGES: tuple[Stage, ...] = tuple(Stage.of(fns, _FRONT_NAMES) for fns in _STAGE_FUNCTIONS)
FRONT_STAGES: tuple[tuple[str, ...], ...] = tuple(stage.names for stage in STAGES)


@dataclass
class FrontResult:
    inputs: dict[str, Any]
    values: dict[str, Any] = field(default_factory=dict)  # every front node computed so far
    early: dict[str, Any] | None = None  # the reply, when the front already decided it

    @property
    def verdict(self) -> Verdict:
        return self.values["guardrail_verdict"]

    @property
    def exact(self) -> CacheLookup | None:
        return self.values.get("exact_cache_lookup")

    @property
    def cache_status(self) -> str:
        """hit, semantic_hit, miss, or bypass (Redis down, or the question never reached the cache)."""
        semantic = self.values.get("semantic_cache_lookup")
        if semantic is not None and semantic.status == "semantic_hit":
            return "semantic_hit"
        return self.exact.status if self.exact is not None else "bypass"

    def details(self) -> dict[str, Any]:
        """Reply keys the front adds to every reply: guardrail decision, cache detail, topic gate."""
        out: dict[str, Any] = {"guardrail": self.verdict.as_reply(), "cache": self.cache_status}
        semantic = self.values.get("semantic_cache_lookup")
        if self.exact is not None:
            out["cache_detail"] = {
                "exact": self.exact.status,
                "semantic": semantic.status if semantic is not None else "not_reached",
                "similarity": semantic.similarity if semantic is not None else None,
            }
        gate: GateDecision | None = self.values.get("topic_gate")
        if gate is not None:
            out["topic_gate"] = gate.as_reply()
        return out


class FrontHalf:
    """Inputs of the front nodes (calibrated thresholds, centroid, semantic shard) and its stages."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        fingerprint: str,
        cache: Cache,
        postgres: tuple[str, str] | None = None,
    ) -> None:
        """`postgres`: the registry's (DSN, schema), where `semantic_cache_store=postgres` keeps the vectors."""
        applied = apply_calibration(settings, fingerprint)
        self.settings, self.calibrated, self.calibration_version = applied.settings, applied.values, applied.version
        self._applied, self._units_checked = applied, set[str]()
        self.embedder, self.cache = embedder, cache
        self.centroids = Centroids(settings.data_dir)
        self._semantic: dict[str, tuple[float, SemanticSetup]] = {}
        self._postgres = postgres
        self._shared: PostgresSemanticCache | None = None
        self._lock = threading.Lock()
        log.info(
            "front_thresholds",
            topic_floor=self.settings.topic_floor,
            semantic_threshold=self.settings.semantic_cache_threshold,
            from_calibration=sorted(self.calibrated),
        )

    def inputs(self, version: IndexVersion, index: VectorIndex) -> dict[str, Any]:
        s = self.settings
        if version.version not in self._units_checked:  # once per index version this process serves
            self._units_checked.add(version.version)
            warn_if_units_differ(self._applied, version.version, dense_units.described(version.chunk_settings))
        centroid = reference = None
        if s.topic_floor is not None or s.topic_reference:
            centroid = self.centroids.get(version.version, s.chunk_strategy, index, self.embedder)
        if s.topic_reference and centroid is not None:
            reference = self.centroids.reference(self.embedder)
        return {
            "max_question_chars": s.max_question_chars,
            "index_languages": list(version.languages),
            "language_gate": s.language_gate,
            "language_min_confidence": s.language_min_confidence,
            "language_index_words": s.language_index_words,
            "clarify_vague": s.clarify_vague,
            "clarify_complaints": s.clarify_complaints,
            "clarify_unnamed": s.clarify_unnamed,
            "clarify_complaint_words": s.clarify_complaint_words,
            "calibration_version": self.calibration_version,
            "topic_setup": TopicSetup(centroid, s.topic_floor, reference),
            "semantic_setup": self.semantic_setup(version.version),
        }

    def semantic_setup(self, version: str) -> SemanticSetup:
        threshold = self.settings.semantic_cache_threshold
        if not self.settings.semantic_cache or threshold is None:
            return SemanticSetup(None, None)
        with self._lock:
            known = self._semantic.get(version)
            if known is not None and (known[1].cache is not None or time.monotonic() - known[0] < _RETRY_SHARD_SECONDS):
                return known[1]
            try:
                setup = SemanticSetup(self._semantic_index(version), threshold)
            except SemanticCacheUnavailable as exc:
                log.warning("semantic_cache_unavailable", version=version, error=str(exc))
                setup = SemanticSetup(None, threshold, str(exc))
            self._semantic[version] = (time.monotonic(), setup)
            return setup

    def _semantic_index(self, version: str) -> SemanticIndex:
        """The version's shard, or the table all processes share (one per process, probed before use)."""
        if self.settings.semantic_cache_store == "edge":
            return open_semantic_cache(self.settings.data_dir / "semantic_cache", version, self.embedder.dimension)
        if self._postgres is None:
            raise SemanticCacheUnavailable("semantic_cache_store=postgres needs the registry's PostgreSQL")
        if self._shared is None:
            self._shared = PostgresSemanticCache(*self._postgres, self.embedder.dimension)
        self._shared.count()  # creates the table; no pgvector, or no PostgreSQL: unavailable, retried later
        return self._shared

    def screen(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The guardrail stage alone (the question's language, the verdict, vagueness), for a caller that
        retrieves without answering (`QueryService.search`): no cache, no topic gate."""
        values: dict[str, Any] = {}
        STAGES[0].run(inputs, {}, values)
        return values

    def run(self, inputs: dict[str, Any], overrides: dict[str, Any] | None = None) -> FrontResult:
        """The front stages up to the first early exit (`FrontResult.early`), or all of them."""
        front, given = FrontResult(inputs), overrides or {}
        for stage in STAGES:
            stage.run(inputs, given, front.values)
            front.early = self._early(front, inputs)
            if front.early is not None:
                break
        return front

    def _early(self, front: FrontResult, inputs: dict[str, Any]) -> dict[str, Any] | None:
        v = front.values
        verdict: Verdict = v["guardrail_verdict"]
        base = {"citations": [], "retrieved": [], **front.details()}
        if not verdict.allowed:
            return {"status": "refused", "answer": verdict.message, "generator": "guardrails", **base}
        vague: Vagueness = v["vagueness"]
        if vague.vague:
            return {"status": "clarify", "answer": clarifying_question(vague), "generator": "clarify", **base}
        exact: CacheLookup | None = v.get("exact_cache_lookup")
        if exact is not None and exact.reply is not None:
            return {**exact.reply, **front.details()}
        gate: GateDecision | None = v.get("topic_gate")
        if gate is not None and not gate.passed:
            return {"status": "no_answer", "answer": NO_ANSWER, "generator": "topic_gate", **base}
        semantic: CacheLookup | None = v.get("semantic_cache_lookup")
        if semantic is not None and semantic.reply is not None:
            self._store(v["exact_cache_key"], semantic.reply)  # the next identical question is an exact hit
            return {**semantic.reply, **front.details()}
        return None

    def remember(self, front: FrontResult, result: dict[str, Any]) -> None:
        """After the answer phase: an answered question's vector joins the semantic cache."""
        setup: SemanticSetup = front.inputs["semantic_setup"]
        semantic: CacheLookup | None = front.values.get("semantic_cache_lookup")
        if setup.cache is None or semantic is None or semantic.status != "miss" or result.get("status") != "answered":
            return
        try:
            setup.cache.add(
                front.values["query_embedding"],
                front.values["semantic_namespace"],
                lexical_signature(front.inputs["question"]),
                front.values["exact_cache_key"],
            )
        except SemanticCacheUnavailable as exc:
            log.warning("semantic_cache_store_failed", error=str(exc))

    def _store(self, key: str, reply: dict[str, Any]) -> None:
        try:
            self.cache.set(key, reply, self.settings.cache_ttl_seconds)
        except CacheUnavailable as exc:
            log.warning("cache_store_failed", error=str(exc))
