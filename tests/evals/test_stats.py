"""The statistics and ranking metrics, against values worked out by hand and by scipy."""

from __future__ import annotations

import math

from scipy.stats import binomtest

from evals.ir_metrics import ndcg_at_k, recall_at_k
from evals.stats import paired_bootstrap_ci, percentile, sign_test


def test_ndcg_matches_a_hand_computed_value() -> None:
    # DCG = 0/log2(2) + 1/log2(3) + 2/log2(4); ideal = 2/log2(2) + 1/log2(3).
    relevance = {"d2": 1, "d3": 2, "d9": 0}
    expected = (1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3))
    assert math.isclose(ndcg_at_k(["d1", "d2", "d3"], relevance, 10), expected)
    assert math.isclose(expected, 0.6199, abs_tol=1e-4)
    assert ndcg_at_k(["d3", "d2"], relevance, 10) == 1.0
    # A relevant document below the cut-off does not count; the ideal still holds both.
    assert math.isclose(ndcg_at_k(["d1", "d3"], relevance, 1), 0.0)
    assert ndcg_at_k(["d1"], {}, 10) == 0.0


def test_recall_counts_relevant_documents_within_k() -> None:
    relevance = {"a": 1, "b": 1, "c": 0}
    assert recall_at_k(["a", "x", "b"], relevance, 2) == 0.5
    assert recall_at_k(["a", "x", "b"], relevance, 3) == 1.0


def test_sign_test_is_exact_and_agrees_with_scipy() -> None:
    a = [0.0] * 8 + [1.0] * 2 + [1.0] * 5  # 8 wins for b, 2 losses, 5 ties (dropped)
    b = [1.0] * 8 + [0.0] * 2 + [1.0] * 5
    assert math.isclose(sign_test(a, b), 2 * (1 + 10 + 45) / 1024)
    assert math.isclose(sign_test(a, b), binomtest(8, 10, 0.5).pvalue)
    assert sign_test([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_paired_bootstrap_interval_brackets_the_mean_difference() -> None:
    a = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    b = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    low, high = paired_bootstrap_ci(a, b, resamples=2000, seed=1)
    assert low <= 3 / 8 <= high and 0.0 <= low < high <= 1.0
    assert paired_bootstrap_ci(a, a) == (0.0, 0.0)
    assert paired_bootstrap_ci(a, b, resamples=500, seed=3) == paired_bootstrap_ci(a, b, resamples=500, seed=3)


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert math.isclose(percentile([10.0, 20.0, 30.0], 95), 29.0)
