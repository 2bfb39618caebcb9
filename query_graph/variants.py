"""The variants of each query-graph node: their valid names, and how a request's choice is merged.

The defaults come from settings; a request may override any of them. Each distinct combination gets
its own Hamilton driver (built once and cached by the service), never one per request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# node -> valid variant names. Settings fields carry the same names, so defaults come from there.
VARIANTS: dict[str, tuple[str, ...]] = {
    "retrieval": ("hybrid", "dense", "bm25"),
    "bm25_engine": ("qdrant", "memory"),
    "fusion": ("rrf", "weighted_rrf", "dbsf", "convex"),
    "bm25_feedback": ("on", "off"),
    "bridge_hop": ("on", "off"),
    "distinct_passages": ("on", "off"),
    "language_route": ("question_and_source", "question", "all"),
    "rerank": ("none", "cross_encoder"),
    "coverage": ("vocabulary", "off"),
    "crag": ("graded", "off"),
    "generator": ("extractive", "litellm"),
    "sentence_ranker": ("asked", "lexical", "cross_encoder"),
    "answer_analyzer": ("plain", "snowball"),
    "verify": ("off", "lexical", "llm"),
}


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
