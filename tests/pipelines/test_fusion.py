"""Rank fusion: RRF, weighted RRF and DBSF on small hand-checked lists."""

from __future__ import annotations

import pytest

from pipelines.fusion import (
    distribution_based_score_fusion,
    fuse,
    fuse_lane,
    interleave_lanes,
    reciprocal_rank_fusion,
    weighted_rank_fusion,
)


def test_rrf_sums_reciprocal_ranks_with_k() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)
    assert next(item for item, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])) == "b"


def test_weighted_rrf_lets_one_list_count_more() -> None:
    even = dict(weighted_rank_fusion([["a", "x"], ["b", "x"]], [1.0, 1.0]))
    bm25_heavy = [i for i, _ in weighted_rank_fusion([["a", "x"], ["b", "x"]], [1.0, 3.0])]
    assert even["a"] == even["b"]  # first of one list each: a tie when the weights are equal
    assert bm25_heavy.index("b") < bm25_heavy.index("a")
    with pytest.raises(ValueError, match="2 rankings but 1 weights"):
        weighted_rank_fusion([["a"], ["b"]], [1.0])


def test_dbsf_keeps_score_gaps_that_rrf_loses() -> None:
    # Dense is sure of "a" (a wide gap); BM25 barely prefers "b" over "a".
    dense = [("a", 0.95), ("b", 0.30), ("c", 0.29), ("d", 0.28)]
    sparse = [("b", 10.1), ("a", 10.0), ("c", 2.0), ("d", 1.0)]
    assert next(i for i, _ in distribution_based_score_fusion([dense, sparse])) == "a"
    scores = dict(distribution_based_score_fusion([dense, sparse]))
    assert all(0.0 <= s <= 2.0 for s in scores.values())


def test_fuse_names_the_valid_methods() -> None:
    with pytest.raises(ValueError, match="valid: rrf, weighted_rrf, dbsf"):
        fuse("borda", [[("a", 1.0)]])
    assert fuse("dbsf", [[("a", 1.0)], []]) == [("a", 0.5)]


def test_lanes_take_turns_whatever_retrievers_searched_them() -> None:
    # The Spanish lane ran both retrievers and they agree; the English lane ran dense search only.
    spanish_dense = [("es-a", 0.9), ("es-b", 0.8), ("es-c", 0.7)]
    spanish_bm25 = [("es-a", 12.0), ("es-b", 9.0), ("es-c", 3.0)]
    english_dense = [("en-a", 0.85), ("en-b", 0.6)]
    spanish = fuse_lane("rrf", "hybrid", spanish_dense, spanish_bm25)
    english = fuse_lane("rrf", "hybrid", english_dense, [])
    assert spanish == fuse("rrf", [spanish_dense, spanish_bm25])
    assert [item for item, _ in interleave_lanes([spanish, english])] == ["es-a", "en-a", "es-b", "en-b", "es-c"]
    assert interleave_lanes([spanish]) == spanish  # one lane: its own fused list
    assert [i for i, _ in fuse_lane("dbsf", "bm25", spanish_dense, spanish_bm25)] == ["es-a", "es-b", "es-c"]
