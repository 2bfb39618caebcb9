"""Rank fusion: RRF, weighted RRF, DBSF and convex combination on small hand-checked lists."""

from __future__ import annotations

import pytest

from pipelines.retrieval.fusion import (
    convex_combination,
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


def test_convex_combination_scales_each_list_between_its_lowest_and_highest() -> None:
    dense = [("a", 0.90), ("b", 0.80), ("c", 0.70)]
    sparse = [("c", 30.0), ("b", 10.0), ("d", 5.0)]
    fused = dict(convex_combination([dense, sparse]))
    assert fused["a"] == pytest.approx(0.5 * 1.0)  # dense's best, missing from BM25's list: 0 there
    assert fused["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.2)
    assert fused["c"] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert fused["d"] == pytest.approx(0.0)
    bm25_heavy = dict(convex_combination([dense, sparse], [1.0, 3.0]))
    assert bm25_heavy["c"] == pytest.approx(0.75) and bm25_heavy["a"] == pytest.approx(0.25)
    assert convex_combination([[("x", 2.0)], []]) == [("x", 0.5)]  # one score: it is its list's best
    with pytest.raises(ValueError, match="2 lists but 1 weights"):
        convex_combination([dense, sparse], [1.0])
    with pytest.raises(ValueError, match="must not all be 0"):
        convex_combination([dense, sparse], [0.0, 0.0])


def test_convex_keeps_a_lone_clear_winner_that_rrf_buries() -> None:
    # BM25 is far surer of "lone" than of anything else and dense did not return it; "mid" and "d3" sit
    # in the middle of both lists, a consensus RRF rewards above a first place in one list.
    dense = [("d1", 0.80), ("d2", 0.78), ("mid", 0.75), ("d3", 0.74), ("x", 0.60)]
    sparse = [("lone", 40.0), ("mid", 15.0), ("d3", 14.0), ("y", 10.0)]
    rrf = [i for i, _ in reciprocal_rank_fusion([[i for i, _ in dense], [i for i, _ in sparse]])]
    assert rrf[:2] == ["mid", "d3"] and rrf.index("lone") > 2
    assert [i for i, _ in fuse("convex", [dense, sparse])][:2] == ["d1", "lone"]


def test_convex_heads_puts_each_lists_first_two_first() -> None:
    # Dense's second ("lone") is not in BM25's list; "mid" sits in the middle of both, and convex ranks it above.
    dense = [("d1", 0.90), ("lone", 0.88), ("mid", 0.70), ("x", 0.50)]
    sparse = [("s1", 30.0), ("s2", 28.0), ("mid", 20.0), ("y", 5.0)]
    convex = [i for i, _ in fuse("convex", [dense, sparse])]
    assert convex.index("mid") < convex.index("lone")
    heads = fuse("convex_heads", [dense, sparse])
    assert [i for i, _ in heads][:4] == [i for i in convex if i in {"d1", "lone", "s1", "s2"}]
    assert [i for i, _ in heads][4:] == [i for i in convex if i not in {"d1", "lone", "s1", "s2"}]
    assert dict(heads) == dict(fuse("convex", [dense, sparse]))  # the scores are convex's; only the order moves


def test_fuse_names_the_valid_methods() -> None:
    with pytest.raises(ValueError, match="valid: rrf, weighted_rrf, dbsf, convex, convex_heads"):
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
