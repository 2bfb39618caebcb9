"""Dense hubness (CSLS): each chunk's mean similarity to its nearest chunks, the discount of dense hits, and the
table built from a real index and its embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.documents import chunk_key
from pipelines.ports import Ranked
from pipelines.retrieval.hubness import HubnessCache, neighbour_similarity, penalised
from tests.query_graph.harbor import Harbor


def test_a_vector_near_all_others_has_the_highest_neighbour_similarity() -> None:
    rng = np.random.default_rng(7)
    spread = rng.normal(size=(12, 16))
    hub = spread.mean(axis=0, keepdims=True)  # the centre: close to every other vector
    figures = neighbour_similarity(np.vstack([spread, hub]), k=5)
    assert int(np.argmax(figures)) == 12
    # A vector is not its own neighbour: two identical vectors score 1 only through each other.
    twins = neighbour_similarity(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), k=1)
    assert twins[0] == pytest.approx(1.0) and twins[2] == pytest.approx(0.0)
    assert neighbour_similarity(np.ones((1, 4))).tolist() == [0.0]


def test_the_discount_reorders_a_hub_below_a_closer_specific_chunk() -> None:
    hits = [Ranked("hub", 0.80), Ranked("page", 0.78), Ranked("other", 0.50)]
    hubness = {"hub": 0.90, "page": 0.70, "other": 0.60}
    order = [h.key for h in penalised(hits, hubness)]
    assert order == ["page", "hub", "other"]  # 0.78 - 0.35 > 0.80 - 0.45
    assert penalised(hits, None) == hits  # no table: the dense list as it was
    unknown = penalised([Ranked("hub", 0.82), Ranked("new", 0.80)], {"hub": 0.90, "page": 0.70})
    assert [h.key for h in unknown] == ["new", "hub"]  # a chunk without a figure counts the mean: 0.80 - 0.40


def test_the_table_covers_every_chunk_of_a_built_index_and_is_built_once(harbor: Harbor) -> None:
    service = harbor.service()
    version, index = service.active()
    cache = HubnessCache(harbor.settings.data_dir)
    strategy = harbor.settings.chunk_strategy
    of = cache.source(version.version, index, strategy, service.embedder)
    table = of(None)
    chunks = index.scroll_chunks(strategy)
    assert table is not None and set(table) == {chunk_key(c.chunk_id) for c in chunks}
    assert all(0.0 < v <= 1.0 for v in table.values())
    assert of(None) is table  # once per index version and view
    # Without the build's embedding cache there is nothing to read the vectors from: no discount, not a guess.
    assert (
        HubnessCache(harbor.settings.data_dir / "elsewhere").source(version.version, index, strategy, service.embedder)(
            None
        )
        is None
    )


def test_the_variant_runs_in_the_graph_and_the_candidates_keep_their_cosines(harbor: Harbor) -> None:
    service = harbor.service()
    question = "Which port does the harbor dashboard listen on?"
    plain = service.answer(question, variants={"retrieval": "dense"})
    reply = service.answer(question, variants={"retrieval": "dense", "dense_hubness": "csls"})
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["variants"]["dense_hubness"] == "csls"
    assert len(service.back.hubness._tables) == 1
    # Fusion orders by the discounted scores; each candidate still reports the cosine (what CRAG's bands grade).
    cosines = {r["chunk_id"]: r["dense_score"] for r in plain["retrieved"]}
    assert set(cosines) & {r["chunk_id"] for r in reply["retrieved"]}
    assert all(cosines.get(r["chunk_id"], r["dense_score"]) == r["dense_score"] for r in reply["retrieved"])
