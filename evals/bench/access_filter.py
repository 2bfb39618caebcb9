"""Benchmark: what filtering by the caller's access groups costs hybrid retrieval, at 2k and at 100k chunks.

    python -m evals.bench.access_filter [--sizes 2000,100000] [--queries 200] [--out bench.json]

For each size, one Qdrant Edge shard is written in a temp dir as a build writes it (the same writer, payload
index on `access`): chunk texts of five sentences drawn from BEIR SciFact's abstracts (real term statistics
for BM25), dense vectors drawn around 200 topic centres (the model is not run: 100k passages would take an
hour on 2 cores), and access groups 70% `public`, 10% each `staff`, `eng`, `legal`. Questions are a sentence
of a random chunk with that chunk's vector plus noise.

Each question's text is embedded by the packaged model (timed, as every real question pays it) and the
question is retrieved by the served default's hybrid plan (`build_plan` with the settings' variants:
fusion, BM25 engine, feedback, bridge hop, distinct passages), the query embedding given, three ways in
rotating order: on the whole index (no filter, the operator), as a public-only caller and as a `staff` caller
(both filtered inside every store query). Reported per size: p50/p95 of each and the filtered/unfiltered p50
ratios.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.access import EVERYTHING, PUBLIC_ONLY, Access
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.qdrant_edge import EdgeShardIndex, EdgeShardWriter
from pipelines.documents import Chunk, make_chunk_id
from pipelines.ports import VectorIndex
from pipelines.retrieval.bm25 import MemoryBM25Cache
from pipelines.retrieval.language_lanes import lanes
from pipelines.retrieval.retriever import RetrievalPlan, build_plan, rule_settings
from pipelines.retrieval.translations import OriginalsCache
from pipelines.settings import Settings
from pipelines.text import analysis

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "beir-scifact" / "corpus.jsonl"
DIMENSION = 384
GROUPS: tuple[tuple[str, float], ...] = (("public", 0.7), ("staff", 0.1), ("eng", 0.1), ("legal", 0.1))


def sentences(path: Path) -> list[str]:
    pool: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            pool.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6)
    return pool


def synthetic_shard(folder: Path, size: int, pool: list[str], rng: random.Random) -> tuple[list[Chunk], np.ndarray]:
    """A shard of `size` chunks as a build writes it; returns the chunks and their dense vectors."""
    np_rng = np.random.default_rng(rng.randrange(2**32))
    centres = np_rng.normal(size=(200, DIMENSION)).astype(np.float32)
    topics = np_rng.integers(0, len(centres), size=size)
    dense = centres[topics] + 0.6 * np_rng.normal(size=(size, DIMENSION)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    names, weights = [g for g, _ in GROUPS], [w for _, w in GROUPS]
    chunks = []
    for i in range(size):
        text = " ".join(rng.choice(pool) for _ in range(5))
        group = rng.choices(names, weights)[0]
        document = f"page-{i // 4}.md"
        chunks.append(
            Chunk(
                make_chunk_id(document, "heading", i % 4),
                document,
                f"Page {i // 4}",
                [f"Page {i // 4}"],
                "",
                document,
                "heading",
                "en",
                i % 4,
                text,
                access=[group],
            )
        )
    terms = [analysis.analyze(c.text) for c in chunks]
    average = float(np.mean([len(t) for t in terms]))
    sparse = [analysis.document_vector(t, average) for t in terms]
    writer = EdgeShardWriter(folder, DIMENSION)
    for start in range(0, size, 4096):
        writer.upsert(chunks[start : start + 4096], dense[start : start + 4096], sparse[start : start + 4096])
    writer.close()
    return chunks, dense


def served_plan(settings: Settings, index: VectorIndex, version: str, memory: MemoryBM25Cache) -> RetrievalPlan:
    s = settings
    return build_plan(
        retrieval="hybrid",
        bm25_engine=s.bm25_engine,
        fusion=s.fusion,
        rerank="none",  # the cross-encoder reads text, not the store: the same with or without a filter
        embedder=None,  # type: ignore[arg-type]  # questions come embedded
        vector_index=index,
        bm25_memory=memory,
        index_version=version,
        strategy="heading",
        candidates=s.candidates,
        top_k=s.top_k,
        rrf_k=s.rrf_k,
        rerank_depth=s.rerank_depth,
        fusion_weights=s.fusion_weights,
        retrieval_lanes=lanes(s.language_route, "en", ["en"], s.source_language, s.language_filter),
        originals_cache=OriginalsCache(),
        **rule_settings(s),
    )


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(float(np.percentile(values, 50)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
    }


def measure(size: int, queries: int, pool: list[str], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="ragline-access-bench-") as tmp:
        started = time.perf_counter()
        chunks, dense = synthetic_shard(Path(tmp) / "shard", size, pool, rng)
        built = time.perf_counter() - started
        index = EdgeShardIndex(Path(tmp) / "shard")
        memory = MemoryBM25Cache()
        callers: dict[str, Access] = {
            "unfiltered": EVERYTHING,
            "public_only": PUBLIC_ONLY,
            "staff": Access.of(["staff"]),
        }
        plans = {
            name: served_plan(settings, index.restricted(a), f"bench-{size}", memory) for name, a in callers.items()
        }
        np_rng = np.random.default_rng(seed)
        asked = []
        for _ in range(queries):
            i = rng.randrange(size)
            words = chunks[i].text.split(". ")[0].split()[:12]
            vector = dense[i] + 0.5 * np_rng.normal(size=DIMENSION).astype(np.float32) / np.sqrt(DIMENSION)
            asked.append((" ".join(words), (vector / np.linalg.norm(vector)).astype(np.float32)))
        for question, vector in asked[:5]:  # warm-up: the BM25 engines of each caller, first allocations
            for plan in plans.values():
                plan.search(question, vector)
        embedder = load_embedder(settings.embedding_model)
        for question, _ in asked[:5]:
            embedder.embed_query(question)
        timings: dict[str, list[float]] = {name: [] for name in plans}
        timings["query_embedding"] = []
        kept: dict[str, int] = dict.fromkeys(plans, 0)
        names = list(plans)
        for n, (question, vector) in enumerate(asked):
            began = time.perf_counter()
            embedder.embed_query(question)  # what a real question costs first (its vector is not used here)
            timings["query_embedding"].append((time.perf_counter() - began) * 1000)
            for name in names[n % 3 :] + names[: n % 3]:  # rotating order: drifts hit all alike
                began = time.perf_counter()
                hits = plans[name].search(question, vector)
                timings[name].append((time.perf_counter() - began) * 1000)
                kept[name] += len(hits)
                assert all(callers[name].allows(h.chunk.access) for h in hits)
        index.close()
    out: dict[str, Any] = {"chunks": size, "build_seconds": round(built, 1)}
    out.update({name: summary(values) for name, values in timings.items()})
    base, embed = out["unfiltered"]["p50"], out["query_embedding"]["p50"]
    for name in ("public_only", "staff"):
        out[f"{name}_over_unfiltered_p50"] = round(out[name]["p50"] / base, 3)
        # With the query embedding every real question pays first: hybrid retrieval as the graph runs it.
        out[f"{name}_over_unfiltered_p50_with_embedding"] = round((out[name]["p50"] + embed) / (base + embed), 3)
    out["mean_hits"] = {name: round(k / queries, 2) for name, k in kept.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scifact", default=str(SCIFACT))
    parser.add_argument("--out")
    args = parser.parse_args()
    pool = sentences(Path(args.scifact))
    s = Settings()
    report: dict[str, Any] = {
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
        "settings": {k: getattr(s, k) for k in ("bm25_engine", "fusion", "bm25_feedback", "bridge_hop", "top_k")},
        "sizes": [],
    }
    for size in (int(x) for x in args.sizes.split(",")):
        result = measure(size, args.queries, pool, args.seed)
        print(json.dumps(result), flush=True)
        report["sizes"].append(result)
    report["load_average"] = list(__import__("os").getloadavg())
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
