"""Measure an analyzer change before making it: in-memory BM25 on a BEIR set, plain vs stemmed.

The scoring is the one the Qdrant path computes: document weights from `pipelines.text.analysis.document_vector`
(saturated, length-normalised tf, k1 = 1.2, b = 0.75) times IDF ln(1 + (N - n + 0.5) / (n + 0.5)),
summed over the query's unique terms. Also the check of the nDCG code against the published BM25
figure on SciFact test (0.665-0.679).

    python -m evals.studies.bm25_stemming ../shared/corpora/beir-scifact train test

With `--dense-shard <the shard ragline eval beir wrote>`, each BM25 ranking is also fused (RRF, k = 60,
by documents) with the shard's dense ranking: what hybrid retrieval would score with that analyzer.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from evals.beir import BeirData, documents_in_order, load_beir
from evals.ir_metrics import ndcg_at_k, recall_at_k
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.qdrant_edge import EdgeShardIndex
from pipelines.retrieval.fusion import weighted_rank_fusion
from pipelines.text import analysis


def bm25_rankings(data: BeirData, analyzer: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """The top 100 documents of every qrels query by in-memory BM25 with this analyzer."""
    docs = [(d.document_id, analyzer(f"{d.title}\n\n{d.text}")) for d in data.corpus]
    average = sum(len(t) for _, t in docs) / len(docs)
    frequency: Counter[str] = Counter()
    for _, terms in docs:
        frequency.update(set(terms))
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
    postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, (_, terms) in enumerate(docs):
        norm = 1.2 * (1 - 0.75 + 0.75 * len(terms) / average)
        for term, tf in Counter(terms).items():
            postings[term].append((i, tf * 2.2 / (tf + norm)))
    rankings = {}
    for query_id in data.qrels:
        totals: dict[int, float] = defaultdict(float)
        for term in set(analyzer(data.queries[query_id])):
            for i, weight in postings.get(term, []):
                totals[i] += idf[term] * weight
        rankings[query_id] = [docs[i][0] for i, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:100]]
    return rankings


def dense_rankings(data: BeirData, shard: Path, model: str) -> dict[str, list[str]]:
    """The top 100 documents of every qrels query by the `ragline eval beir` shard's dense search."""
    embedder = load_embedder(model)
    index = EdgeShardIndex(shard)
    try:
        return {
            q: documents_in_order([h.chunk for h in index.dense_search(embedder.embed_query(data.queries[q]), 100)])
            for q in data.qrels
        }
    finally:
        index.close()


def mean_scores(data: BeirData, rankings: dict[str, list[str]]) -> tuple[float, float, int]:
    ndcg = [ndcg_at_k(rankings[q], rel, 10) for q, rel in data.qrels.items()]
    recall = [recall_at_k(rankings[q], rel, 100) for q, rel in data.qrels.items()]
    return round(sum(ndcg) / len(ndcg), 4), round(sum(recall) / len(recall), 4), len(ndcg)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("splits", nargs="+")
    parser.add_argument("--dense-shard", type=Path, help="fuse with this `ragline eval beir` shard's dense ranking")
    parser.add_argument("--model", default="bge-small-en-v1.5-int8")
    args = parser.parse_args(argv)
    for split in args.splits:
        data = load_beir(args.data, args.data / "qrels" / f"{split}.tsv")
        dense = dense_rankings(data, args.dense_shard, args.model) if args.dense_shard else None
        if dense is not None:
            ndcg, recall, n = mean_scores(data, dense)
            print(f"{split} dense: n={n} nDCG@10={ndcg} recall@100={recall}", flush=True)
        for name, analyzer in (("plain", analysis.analyze), ("stemmed", analysis.analyze_english_stem)):
            lexical = bm25_rankings(data, analyzer)
            ndcg, recall, n = mean_scores(data, lexical)
            print(f"{split} {name}: n={n} nDCG@10={ndcg} recall@100={recall}", flush=True)
            if dense is None:
                continue
            for weights in ((1.0, 1.0), (1.5, 1.0), (2.0, 1.0)):
                fused = {
                    q: [d for d, _ in weighted_rank_fusion([dense[q], lexical[q]], weights, 60)] for q in data.qrels
                }
                ndcg, recall, n = mean_scores(data, fused)
                label = f"dense + {name} RRF k=60 weights {weights[0]:g}:{weights[1]:g}"
                print(f"{split} {label}: n={n} nDCG@10={ndcg} recall@100={recall}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
