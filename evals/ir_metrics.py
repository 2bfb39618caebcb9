"""Ranked-retrieval metrics over graded relevance judgements (BEIR / TREC conventions)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain with linear gain: sum of rel_i / log2(i + 1), ranks from 1."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k as trec_eval / pytrec_eval compute it (what BEIR reports): the ideal ranking sorts
    every judged-relevant document by grade; documents without a judgement count as 0."""
    gains = [float(relevance.get(doc, 0)) for doc in ranked[:k]]
    ideal = sorted((float(g) for g in relevance.values() if g > 0), reverse=True)[:k]
    best = dcg(ideal)
    return dcg(gains) / best if best > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int = 100) -> float:
    relevant = {doc for doc, grade in relevance.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)
