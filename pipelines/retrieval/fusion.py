"""Rank fusion of several candidate lists: RRF, weighted RRF, DBSF and convex combination.

Every function takes one list per retriever (best first) of `(item, score)` pairs and returns the
fused `(item, score)` list, best first, ties broken by item so the order is deterministic.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

Ranked = Sequence[tuple[str, float]]
FUSIONS = ("rrf", "weighted_rrf", "dbsf", "convex", "convex_heads", "convex_kept_heads")
HEADS = 2  # `convex_heads`: each list's first hits that lead the fused list


def _sorted(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """RRF (Cormack et al. 2009): score(d) = sum over lists of 1 / (k + rank), rank from 1."""
    return weighted_rank_fusion(rankings, [1.0] * len(rankings), k)


def weighted_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int = 60
) -> list[tuple[str, float]]:
    """Weighted RRF: each list's 1 / (k + rank) is multiplied by its weight (a trusted retriever counts more)."""
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    if k < 0 or any(w < 0 for w in weights):
        raise ValueError("RRF k and the weights must not be negative")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _sorted(scores)


def distribution_based_score_fusion(lists: Sequence[Ranked]) -> list[tuple[str, float]]:
    """DBSF (as in Qdrant): each list's scores are scaled to [0, 1] between mean ± 3 standard
    deviations of that list, clipped, then summed. Unlike RRF it keeps how far apart the scores are."""
    fused: dict[str, float] = {}
    for ranked in lists:
        if not ranked:
            continue
        values = [s for _, s in ranked]
        mean = statistics.fmean(values)
        spread = statistics.pstdev(values) if len(values) > 1 else 0.0
        low, high = mean - 3 * spread, mean + 3 * spread
        for item, score in ranked:
            scaled = 0.5 if high <= low else min(1.0, max(0.0, (score - low) / (high - low)))
            fused[item] = fused.get(item, 0.0) + scaled
    return _sorted(fused)


def convex_combination(lists: Sequence[Ranked], weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Convex combination of min-max scaled scores (Bruch et al. 2023, "An Analysis of Fusion Functions
    for Hybrid Retrieval"): each list's scores are scaled to [0, 1] between its lowest and its highest,
    weighted, and summed; an item a list did not return gets 0 from it. The weights are normalised to sum
    to 1, so equal weights are the plain mean. Like DBSF it keeps score gaps, which RRF throws away: a
    chunk one retriever is far surer of than of anything else ranks high even when the other retriever
    missed it. Unlike DBSF's mean +- 3 standard deviations, min-max keeps that gap whole on a list of 30,
    where one outlier also inflates the deviation that would scale it."""
    weights = list(weights or [1.0] * len(lists))
    if len(weights) != len(lists):
        raise ValueError(f"{len(lists)} lists but {len(weights)} weights")
    if any(w < 0 for w in weights) or not sum(weights) > 0:
        raise ValueError("convex combination weights must not be negative and must not all be 0")
    total = sum(weights)
    fused: dict[str, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        if not ranked:
            continue
        values = [s for _, s in ranked]
        low, high = min(values), max(values)
        for item, score in ranked:
            scaled = 1.0 if high <= low else (score - low) / (high - low)
            fused[item] = fused.get(item, 0.0) + weight / total * scaled
    return _sorted(fused)


def convex_with_heads(
    lists: Sequence[Ranked], weights: Sequence[float] | None = None, heads: int = HEADS
) -> list[tuple[str, float]]:
    """The convex combination, except that each list's first `heads` hits come first (in the convex order
    among themselves): a chunk one retriever ranks near the top and the other does not return at all gets
    0 from that other list, and chunks that both return at middling ranks pass it; here every retriever's
    surest hits are among the first places whatever the other says."""
    fused = convex_combination(lists, weights)
    lead = {item for ranked in lists for item, _ in ranked[:heads]}
    return [p for p in fused if p[0] in lead] + [p for p in fused if p[0] not in lead]


def fuse(
    method: str, lists: Sequence[Ranked], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse with the named method; an unknown name is a clear error."""
    rankings = [[item for item, _ in ranked] for ranked in lists]
    if method == "rrf":
        return reciprocal_rank_fusion(rankings, k)
    if method == "weighted_rrf":
        return weighted_rank_fusion(rankings, list(weights or [1.0] * len(lists)), k)
    if method == "dbsf":
        return distribution_based_score_fusion(lists)
    if method == "convex":
        return convex_combination(lists, weights)
    if method in ("convex_heads", "convex_kept_heads"):
        # `convex_kept_heads`: the caller has put each list's first hits it keeps first
        # (pipelines/retrieval/retriever.py `kept_first`); the fusion itself is `convex_heads`.
        return convex_with_heads(lists, weights)
    raise ValueError(f"unknown fusion {method!r}; valid: {', '.join(FUSIONS)}")


RETRIEVER_LISTS = {"hybrid": (0, 1), "dense": (0,), "bm25": (1,)}  # which of (dense, BM25) a retrieval fuses


def fuse_lane(
    method: str,
    retrieval: str,
    dense: Ranked,
    sparse: Ranked,
    k: int = 60,
    weights: Sequence[float] = (1.0, 1.0),
) -> list[tuple[str, float]]:
    """One retrieval lane's (pipelines/retrieval/language_lanes.py) dense and BM25 lists fused with `method`;
    `retrieval` picks the lists (hybrid: both, dense or bm25: one)."""
    kinds = RETRIEVER_LISTS[retrieval]
    lists = [(dense, sparse)[kind] for kind in kinds]
    return fuse(method, lists, k, [weights[kind] if kind < len(weights) else 1.0 for kind in kinds])


def interleave_lanes(lanes: Sequence[Ranked], k: int = 60) -> list[tuple[str, float]]:
    """The lanes' fused lists by RRF, so the lanes take turns at the top (a lane's first, the next lane's
    first, ...); a tie goes to the earlier lane, the question's own. Fusing every lane's dense and BM25
    lists at once instead would rank a lane searched by both retrievers far above one searched by one."""
    if len(lanes) == 1:
        return list(lanes[0])
    scores: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for number, lane in enumerate(lanes):
        for rank, (item, _) in enumerate(lane, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(item, (rank, number))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))
