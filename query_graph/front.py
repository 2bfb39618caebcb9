"""The front of the query graph, run stage by stage so that each early exit skips everything behind it.

    guardrails (+ clarify) -> exact cache -> query embedding + topic gate -> semantic cache -> answer phase

Each stage is one execution of the same Hamilton graph; everything a stage computed (its intermediate
nodes too) is handed to the next ones as overrides, so no node runs twice (the answer phase reuses the
query embedding). A stage runs from a plan worked out on its first use (`StagePlan`): `driver.execute`
would otherwise redo the graph walk, the run id and the pruning bookkeeping on every call, which cost
three times what the guardrail and exact-cache nodes themselves do on a cache hit. A refusal
or a clarification returns before any cache, model or store is touched, a cache hit before any model,
and an off-topic question after one embedding and one dot product. Refusals, clarifications and
topic-gate abstentions are never cached.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import time
import types
import typing
from dataclasses import dataclass, field
from typing import Any

import structlog
from hamilton import driver, node
from hamilton.execution.graph_functions import combine_config_and_inputs, execute_lifecycle_for_node

from pipelines.adapters.redis_cache import CacheUnavailable
from pipelines.adapters.registry import IndexVersion
from pipelines.caching.semantic import SemanticCacheUnavailable, lexical_signature, open_semantic_cache
from pipelines.guardrails.calibration import apply_calibration, warn_if_units_differ
from pipelines.guardrails.screen import Verdict
from pipelines.guardrails.topic_gate import Centroids, GateDecision
from pipelines.guardrails.vagueness import Vagueness, clarifying_question
from pipelines.ingestion import dense_units
from pipelines.ports import Cache, Embedder, VectorIndex
from pipelines.settings import Settings
from query_graph.nodes.cache import CacheLookup, SemanticSetup
from query_graph.nodes.gate import TopicSetup

log = structlog.get_logger(__name__)

FRONT_STAGES: tuple[tuple[str, ...], ...] = (
    ("guardrail_verdict", "vagueness"),
    ("cache_namespace", "exact_cache_key", "exact_cache_lookup"),
    ("query_embedding", "topic_gate"),
    ("semantic_namespace", "semantic_cache_lookup"),
)
NO_ANSWER = "I don't know: the documents do not cover this question."
_RETRY_SHARD_SECONDS = 60.0


_run_ids = itertools.count()


@dataclass(frozen=True)
class StagePlan:
    """One stage of one driver for one set of input and override names: the function nodes to call in
    the order `driver.execute` calls them, each with the names of the arguments it gets, and the input
    nodes whose values Hamilton's input check (the driver's adapters included) looks at on every run.

    Nodes run through Hamilton's own `execute_lifecycle_for_node`, so the node hooks (per-node timings)
    and Hamilton's error logging are those of `driver.execute`. A driver whose adapters hook the graph
    run itself (pre/post graph execute, remote execution) is not planned: it runs through `execute`."""

    graph: driver.Driver
    outputs: tuple[str, ...]
    steps: tuple[tuple[node.Node, tuple[str, ...]], ...]
    nodes: frozenset[node.Node]
    user_nodes: frozenset[node.Node]
    # When Hamilton's verdict on every input depends only on the type of its value (and of a sequence's
    # first item), an input check that passed for those types is not repeated: the adapter dispatch of
    # the check costs more than the guardrail nodes. A Literal-typed input is checked on every run.
    by_type: bool = False
    checked: set[tuple[type, ...]] = field(default_factory=set, compare=False, hash=False)

    @classmethod
    def build(
        cls, graph: driver.Driver, outputs: tuple[str, ...], inputs: dict[str, Any], overrides: dict[str, Any]
    ) -> StagePlan | None:
        adapter = graph.adapter
        if any(adapter.does_hook(h, is_async=False) for h in ("pre_graph_execute", "post_graph_execute")) or (
            adapter.does_method("do_remote_execute", is_async=False)
        ):
            return None
        fg = graph.graph
        nodes, user_nodes = fg.get_upstream_nodes(list(outputs), inputs, overrides)
        graph.graph_executor.validate(list(nodes | user_nodes))
        given = set(fg.config) | set(inputs) | set(overrides)
        steps: list[tuple[node.Node, tuple[str, ...]]] = []
        seen: set[str] = set()

        def visit(n: node.Node) -> None:  # the depth-first order of Hamilton's execute_subdag
            if n.name in seen or n.name in overrides or n.user_defined:
                return
            seen.add(n.name)
            for dep in n.dependencies:
                visit(dep)
            # An optional input nobody gave is left out, so the function's default applies (as in Hamilton).
            args = tuple(d.name for d in n.dependencies if d.name in given or not d.user_defined)
            steps.append((n, args))

        for name in outputs:
            if name in fg.nodes:
                visit(fg.nodes[name])
        by_type = all(_checked_by_type(n.type) for n in user_nodes)
        return cls(graph, outputs, tuple(steps), frozenset(nodes), frozenset(user_nodes), by_type)

    def run(self, inputs: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        """Every node the stage computed (its outputs and what they were computed from)."""
        fg, adapter = self.graph.graph, self.graph.adapter
        given = combine_config_and_inputs(fg.config, inputs)
        if not self.by_type:
            driver.Driver.validate_inputs(fg, adapter, self.user_nodes, inputs, self.nodes)
        else:
            shapes = tuple(_shape(given.get(n.name, _ABSENT)) for n in self.user_nodes)
            if shapes not in self.checked:
                driver.Driver.validate_inputs(fg, adapter, self.user_nodes, inputs, self.nodes)
                self.checked.add(shapes)
        values = {**given, **overrides}
        run_id, computed = f"front-{next(_run_ids)}", {}
        for n, args in self.steps:
            kwargs = {a: values[a] for a in args}
            computed[n.name] = values[n.name] = execute_lifecycle_for_node(
                __node_=n, __adapter=adapter, __run_id=run_id, __task_id=None, **kwargs
            )
        for name in self.outputs:
            computed.setdefault(name, values.get(name))
        return computed


_ABSENT = object()


def _checked_by_type(t: Any) -> bool:
    """Whether Hamilton's input check (and the port check of query_graph/port_inputs.py) of a value
    for a node of type `t` depends on nothing but the value's type, and a sequence's first item's."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if t is Any or (inspect.isclass(t) and origin is None):
        return True  # a class or a runtime Protocol: isinstance
    if origin in (typing.Union, types.UnionType):
        return all(_checked_by_type(a) for a in args)
    if origin in (list, tuple):
        return all(inspect.isclass(a) and typing.get_origin(a) is None for a in args)
    return False  # Literal (the value itself), nested generics, type variables: check every value


def _shape(value: Any) -> tuple[type, ...]:
    if type(value) in (list, tuple):
        return (type(value), type(value[0]) if value else type(None))
    return (type(value),)


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

    def __init__(self, settings: Settings, embedder: Embedder, fingerprint: str, cache: Cache) -> None:
        applied = apply_calibration(settings, fingerprint)
        self.settings, self.calibrated, self.calibration_version = applied.settings, applied.values, applied.version
        self._applied, self._units_checked = applied, set[str]()
        self.embedder, self.cache = embedder, cache
        self.centroids = Centroids(settings.data_dir)
        self._semantic: dict[str, tuple[float, SemanticSetup]] = {}
        self._plans: dict[tuple[Any, ...], StagePlan | None] = {}
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
        centroid = None
        if s.topic_floor is not None:
            centroid = self.centroids.get(version.version, s.chunk_strategy, index, self.embedder)
        return {
            "max_question_chars": s.max_question_chars,
            "index_languages": list(version.languages),
            "language_gate": s.language_gate,
            "language_min_confidence": s.language_min_confidence,
            "clarify_vague": s.clarify_vague,
            "calibration_version": self.calibration_version,
            "topic_setup": TopicSetup(centroid, s.topic_floor),
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
                shard = open_semantic_cache(self.settings.data_dir / "semantic_cache", version, self.embedder.dimension)
                setup = SemanticSetup(shard, threshold)
            except SemanticCacheUnavailable as exc:
                log.warning("semantic_cache_unavailable", version=version, error=str(exc))
                setup = SemanticSetup(None, threshold, str(exc))
            self._semantic[version] = (time.monotonic(), setup)
            return setup

    def run(self, graph: driver.Driver, inputs: dict[str, Any], overrides: dict[str, Any] | None) -> FrontResult:
        front = FrontResult(inputs)
        for stage in FRONT_STAGES:
            given = {**(overrides or {}), **front.values}
            plan = self._plan(graph, stage, inputs, given)
            if plan is None:
                front.values.update(graph.execute(list(stage), inputs=inputs, overrides=given))
            else:
                front.values.update(plan.run(inputs, given))
            front.early = self._early(front, inputs)
            if front.early is not None:
                break
        return front

    def _plan(
        self, graph: driver.Driver, stage: tuple[str, ...], inputs: dict[str, Any], overrides: dict[str, Any]
    ) -> StagePlan | None:
        # Which nodes run depends only on the driver, the stage and which names are given, not on values.
        key = (graph, stage, frozenset(inputs), frozenset(overrides))
        if key not in self._plans:
            self._plans[key] = StagePlan.build(graph, stage, inputs, overrides)
        return self._plans[key]

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
