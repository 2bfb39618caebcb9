"""Per-request variant overrides: checked against what the query graph offers before it runs."""

from __future__ import annotations

import inspect
from typing import Any

from query_graph.service import QueryService
from server.errors import ApiError


def variant_options(service: QueryService) -> dict[str, list[str]]:
    """{node: [variant, ...]} as the service exposes it; empty when the graph has no per-request variants."""
    options = getattr(service, "variant_options", None)
    if callable(options):
        return {node: sorted(names) for node, names in options().items()}
    return {}


def answer_kwargs(service: QueryService, variants: dict[str, str] | None) -> dict[str, Any]:
    """Keyword arguments for `service.answer`, or a 400 naming the valid variants."""
    if not variants:
        return {}
    options = variant_options(service)
    accepts = "variants" in inspect.signature(service.answer).parameters
    if not options or not accepts:
        raise ApiError(400, "unknown_variant", "this server's query graph takes no per-request variant overrides")
    problems = []
    for node, name in variants.items():
        if node not in options:
            problems.append(f"no node {node!r} has variants (nodes with variants: {', '.join(sorted(options))})")
        elif name not in options[node]:
            problems.append(f"{node}: unknown variant {name!r} (valid: {', '.join(options[node])})")
    if problems:
        raise ApiError(400, "unknown_variant", "; ".join(problems))
    return {"variants": variants}
