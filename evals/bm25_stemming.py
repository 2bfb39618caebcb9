"""Measure an analyzer change before making it: in-memory BM25 on a BEIR set, plain vs stemmed.

The scoring is the one the Qdrant path computes: document weights from `pipelines.bm25.document_vector`
(saturated, length-normalised tf, k1 = 1.2, b = 0.75) times IDF ln(1 + (N - n + 0.5) / (n + 0.5)),
summed over the query's unique terms. Also the check of the nDCG code against the published BM25
figure on SciFact test (0.665-0.679).

    python -m evals.bm25_stemming ../shared/corpora/beir-scifact train test
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import snowballstemmer

from evals.beir import load_beir
from evals.ir_metrics import ndcg_at_k, recall_at_k
from pipelines import bm25

_STEMMER = snowballstemmer.stemmer("english")


def analyze_stemmed(text: str) -> list[str]:
    """The project's analyzer, then Snowball English on purely alphabetic terms (identifiers stay whole)."""
    return [_STEMMER.stemWord(t) if t.isalpha() else t for t in bm25.analyze(text)]


def score(data_dir: Path, split: str, analyzer: Callable[[str], list[str]]) -> tuple[float, float, int]:
    data = load_beir(data_dir, data_dir / "qrels" / f"{split}.tsv")
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
    ndcg, recall = [], []
    for query_id, relevance in data.qrels.items():
        totals: dict[int, float] = defaultdict(float)
        for term in set(analyzer(data.queries[query_id])):
            for i, weight in postings.get(term, []):
                totals[i] += idf[term] * weight
        ranked = [docs[i][0] for i, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:100]]
        ndcg.append(ndcg_at_k(ranked, relevance, 10))
        recall.append(recall_at_k(ranked, relevance, 100))
    return round(sum(ndcg) / len(ndcg), 4), round(sum(recall) / len(recall), 4), len(ndcg)


def main(argv: list[str]) -> int:
    data_dir = Path(argv[0])
    for split in argv[1:]:
        for name, analyzer in (("plain", bm25.analyze), ("stemmed", analyze_stemmed)):
            ndcg, recall, n = score(data_dir, split, analyzer)
            print(f"{split} {name}: n={n} nDCG@10={ndcg} recall@100={recall}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
