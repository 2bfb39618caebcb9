"""Variant names are declared once, in the Literal types of pipelines/settings.py: `VARIANTS` is read
from them, the graph's `@config.when` functions (`<node>__<variant>`) answer to exactly those names, and
a driver for every variant value of every node takes one question through the whole graph."""

from __future__ import annotations

import inspect
from typing import Any, get_args

import pytest
from hamilton import driver

from pipelines.settings import Settings
from query_graph.driver import MODULES
from query_graph.service import QueryFailed, QueryService
from query_graph.variants import SETTINGS_ONLY, VARIANTS, default_variants
from tests.llm_loopback import closed_port
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"
ALL = [(node, name) for node, names in VARIANTS.items() for name in names]


def graph_of(config: dict[str, str]) -> dict[str, str]:
    """node name -> the function it comes from, in the driver built with `config` (its qualified name:
    Hamilton renames a @config.when function after its node)."""
    graph = driver.Builder().with_modules(*MODULES).with_config(config).build()
    return {
        n.name: n.originating_functions[0].__qualname__
        for n in graph.list_available_variables()
        if not n.is_external_input
    }


def variant_functions() -> set[str]:
    """Every public function of the node modules named `<node>__<suffix>` (Hamilton's @config.when names)."""
    return {
        name
        for module in MODULES
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if fn.__module__ == module.__name__ and not name.startswith("_") and "__" in name
    }


def test_variants_are_the_settings_literals() -> None:
    for node, names in VARIANTS.items():
        declared = get_args(Settings.model_fields[node].annotation)
        assert names == tuple(n for n in declared if n not in SETTINGS_ONLY.get(node, ())), node
        assert Settings.model_fields[node].default in names, node
    # A settings-only value becomes a variant of the graph before any driver is built with it.
    for node, extra in SETTINGS_ONLY.items():
        for name in extra & set(get_args(Settings.model_fields[node].annotation)):
            given: dict[str, Any] = {node: name}
            assert default_variants(Settings(**given))[node] in VARIANTS[node], (node, name)


def test_config_when_functions_answer_to_the_declared_names() -> None:
    defaults = default_variants(Settings())
    base = graph_of(defaults)
    chosen: set[str] = set()
    for node, names in VARIANTS.items():
        graphs = {name: graph_of({**defaults, node: name}) for name in names}
        chosen |= {fn for g in graphs.values() for fn in g.values()}
        switched = {n for g in graphs.values() for n, fn in g.items() if base.get(n) != fn}
        if not switched:  # no function of its own: a node reads the variant from the graph's config
            takes = [
                m
                for m in MODULES
                for _, fn in inspect.getmembers(m, inspect.isfunction)
                if node in inspect.signature(fn).parameters
            ]
            assert takes, f"variant {node} chooses no function and no node reads it"
            continue
        for name, g in graphs.items():  # each switched node comes from the function named after this variant
            for n in switched:
                assert g.get(n) == f"{n}__{name}", f"{node}={name}: node {n} comes from {g.get(n)}, not {n}__{name}"
    orphans = variant_functions() - chosen
    assert not orphans, f"@config.when functions no declared variant chooses: {sorted(orphans)}"


@pytest.fixture
def service(harbor: Harbor) -> QueryService:
    """A service with a cache of its own: each variant is answered, not read from an earlier test's entry.
    No language model is configured (a loopback port nobody listens on): the variants that need one
    must say so clearly; tests/query_graph/test_generation_gguf.py runs them against the real model."""
    return harbor.service(llm_api_base=f"http://127.0.0.1:{closed_port()}/v1", llm_retries=0)


NEEDS_LLM = {("generator", "litellm"): "generation_unavailable", ("verify", "llm"): "verification_unavailable"}


@pytest.mark.parametrize(("node", "name"), ALL, ids=[f"{n}={v}" for n, v in ALL])
def test_every_variant_takes_a_question_through_the_graph(service: QueryService, node: str, name: str) -> None:
    if (node, name) in NEEDS_LLM:
        with pytest.raises(QueryFailed) as info:
            service.answer(PORT_Q, variants={node: name})
        assert info.value.status == 503 and info.value.code == NEEDS_LLM[(node, name)], info.value.message
        return
    reply = service.answer(PORT_Q, variants={node: name})
    assert reply["variants"][node] == name and reply["cache"] == "miss"
    assert reply["status"] == "answered" and "7420" in reply["answer"], reply["answer"]
    assert {"fused_candidates", "draft_answer", "reply"} <= set(reply["timings_ms"])
    assert len(service.back.drivers) == (1 if service.back.defaults[node] == name else 2)  # the default's, its own
