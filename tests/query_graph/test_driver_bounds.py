"""Bounded cost of per-request variants: the drivers kept are bounded, and a deployment can bar nodes."""

from __future__ import annotations

import pytest

from query_graph.driver import DriverCache
from query_graph.service import QueryFailed
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"


def test_the_driver_cache_keeps_the_most_recently_used_only() -> None:
    cache = DriverCache(keep=2)
    first = cache.get({"retrieval": "bm25"})
    cache.get({"retrieval": "dense"})
    assert cache.get({"retrieval": "bm25"}) is first  # kept, and now the most recent
    cache.get({"retrieval": "hybrid"})  # drops "dense", the least recently used
    assert len(cache) == 2
    assert cache.get({"retrieval": "bm25"}) is first


def test_requests_cycling_through_variants_hold_a_bounded_number_of_drivers(harbor: Harbor) -> None:
    service = harbor.service(variant_drivers_kept=3)
    for variants in (
        {"retrieval": "bm25"},
        {"retrieval": "dense"},
        {"verify": "lexical"},
        {"coverage": "off"},
        {"retrieval": "bm25", "verify": "lexical"},
    ):
        assert service.answer(PORT_Q, variants=variants)["status"] == "answered"
    assert len(service.back.drivers) <= 3


def test_a_node_the_deployment_does_not_offer_is_refused_by_name(harbor: Harbor) -> None:
    service = harbor.service(request_variant_nodes=["retrieval"])
    assert service.answer(PORT_Q, variants={"retrieval": "bm25"})["status"] == "answered"
    with pytest.raises(QueryFailed, match="does not let a request choose generator") as refused:
        service.answer(PORT_Q, variants={"generator": "litellm"})
    assert refused.value.status == 400 and refused.value.code == "unknown_variant"
    assert set(service.variant_options()) == {"retrieval"}
