"""The variants of each query-graph node: their valid names, and how a request's choice is merged.

Each variant name is declared once, in the `Literal` type of the `Settings` field named after its node
(pipelines/settings.py); `VARIANTS` is read from those types. The graph's `@config.when` functions
(`<node>__<variant>`, query_graph/nodes/) are named after them, and tests/query_graph/test_variants.py
ties the two together. The defaults come from settings; a request may override any of them. Each
distinct combination gets its own Hamilton driver (built once and cached by the service), never one
per request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from pipelines.settings import Settings

# The nodes that have variants: each a Settings field of the same name, whose Literal lists the variants.
VARIANT_NODES: tuple[str, ...] = (
    "follow_up_rewrite",
    "retrieval",
    "bm25_engine",
    "fusion",
    "bm25_feedback",
    "bridge_hop",
    "distinct_passages",
    "sub_queries",
    "query_expansion",
    "dense_hubness",
    "dense_sentences",
    "dense_feedback",
    "release_notes",
    "language_route",
    "rerank",
    "coverage",
    "coverage_names",
    "breadth",
    "crag",
    "generator",
    "llm_answer",
    "sentence_ranker",
    "answer_scope",
    "answer_span",
    "answer_pool",
    "answer_antecedent",
    "answer_blocks",
    "answer_asks",
    "answer_subject",
    "answer_value",
    "answer_gate",
    "answer_analyzer",
    "verify",
)
# Values a setting accepts that are no variant of the graph: Settings turns each into one before a graph
# sees it (`generator=local` is the `litellm` generator with the packaged model).
SETTINGS_ONLY: dict[str, frozenset[str]] = {"generator": frozenset({"local"})}


def _declared(node: str) -> tuple[str, ...]:
    names = get_args(Settings.model_fields[node].annotation)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"Settings.{node} must be a Literal of variant names, not {Settings.model_fields[node].annotation}"
        )
    return tuple(n for n in names if n not in SETTINGS_ONLY.get(node, frozenset()))


# node -> valid variant names, in the order the Settings Literal gives them.
VARIANTS: dict[str, tuple[str, ...]] = {node: _declared(node) for node in VARIANT_NODES}


class UnknownVariant(ValueError):
    """A request named a node or a variant that does not exist (the server answers 400)."""


def default_variants(settings: Any) -> dict[str, str]:
    return {node: str(getattr(settings, node)) for node in VARIANTS}


def resolve_variants(defaults: Mapping[str, str], overrides: Mapping[str, str] | None) -> dict[str, str]:
    """The defaults with a request's overrides applied; a clear error names what is valid."""
    chosen = dict(defaults)
    for node, name in (overrides or {}).items():
        if node not in VARIANTS:
            raise UnknownVariant(f"unknown node {node!r} in variants; valid nodes: {', '.join(sorted(VARIANTS))}")
        if name not in VARIANTS[node]:
            raise UnknownVariant(f"unknown {node} variant {name!r}; valid: {', '.join(VARIANTS[node])}")
        chosen[node] = name
    return chosen


def config_key(variants: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(variants.items()))
