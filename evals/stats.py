"""Small statistics for evaluation reports: percentiles, paired bootstrap intervals, exact sign test.

Everything is exact or seeded, so a report reproduces bit for bit from the same per-question outcomes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_summary(values_ms: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(values_ms, 50), 3), "p95": round(percentile(values_ms, 95), 3)}


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], resamples: int = 10000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of mean(b - a), resampling questions (pairs) with replacement."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if not a:
        return (0.0, 0.0)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return (percentile(means, 2.5), percentile(means, 97.5))


def sign_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided sign test on paired outcomes: ties dropped, P under Binomial(n, 1/2)."""
    wins = sum(1 for x, y in zip(a, b, strict=True) if y > x)
    losses = sum(1 for x, y in zip(a, b, strict=True) if y < x)
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2.0 * tail)
