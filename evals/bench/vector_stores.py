"""The two embedded-machine vector stores side by side on one corpus: a Qdrant Edge shard (the default) and the
PostgreSQL tables of `RAGLINE_VECTOR_STORE=postgres` (what `ragline serve --workers N` reads).

One data dir, one registry: the source is built into a shard, then rebuilt into PostgreSQL (the vectors come from
the embedding cache, so the second build embeds nothing). For every question of the golden file, the dense and the
BM25 top 30 of both stores are compared (same chunks in the same order, up to ties; largest score difference)
and each search is timed, interleaved so that both stores see the same machine load:

    .venv/bin/python -m evals.bench.vector_stores --source ../shared/corpora/fastapi-docs --include 'en/**/*.md' \\
        --golden ../shared/golden/fastapi_en.jsonl --out vector_stores.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from pipelines.text import analysis

LIMIT = 30


def percentiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50_ms": round(ordered[len(ordered) // 2], 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 2),
    }


def compare(a: list[Any], b: list[Any]) -> tuple[bool, float]:
    """Whether two rankings hold the same chunks in the same order up to ties (scores within 1e-4), and the
    largest score difference between the lists' places."""
    if len(a) != len(b):
        return False, float("inf")
    gap = max((abs(x.score - y.score) for x, y in zip(a, b, strict=True)), default=0.0)
    same = {(round(x.score, 4), x.key) for x in a} == {(round(y.score, 4), y.key) for y in b}
    return same or [x.key for x in a] == [y.key for y in b], gap


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = [json.loads(line)["question"] for line in args.golden.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="ragline-stores-") as home:
        extra = {"include": args.include} if args.include else {}
        base = Settings(home=Path(home), source=args.source, semantic_cache=False, **extra)
        indexes, builds = {}, {}
        opened = []
        for store in ("qdrant", "postgres"):
            settings = base.model_copy(update={"vector_store": store})
            env = {
                **os.environ,
                "RAGLINE_HOME": home,
                "RAGLINE_SOURCE": str(args.source),
                "RAGLINE_VECTOR_STORE": store,
            }
            if args.include:
                env["RAGLINE_INCLUDE"] = json.dumps(args.include)
            started = time.perf_counter()
            built = subprocess.run(
                [sys.executable, "-m", "ragline", "index", "build", "--json"],
                env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            if built.returncode != 0:
                raise RuntimeError(f"ragline index build failed: {built.stderr[-2000:]}")
            seconds = time.perf_counter() - started
            builds[store] = {"chunks": json.loads(built.stdout)["chunks"], "seconds": round(seconds, 1)}
            print(f"vector_stores: {store} built in {seconds:.1f} s", file=sys.stderr, flush=True)
            stores = open_stores(settings)
            opened.append(stores)
            active = stores.registry.active()
            assert active is not None
            analyzer = active.chunk_settings.get("bm25_analyzer", "plain")
            indexes[store] = stores.open_index(active.location)
        embedder = load_embedder(base.embedding_model)
        times: dict[str, dict[str, list[float]]] = {s: {"dense": [], "sparse": []} for s in indexes}
        same = {"dense": 0, "sparse": 0}
        gaps = {"dense": 0.0, "sparse": 0.0}
        for question in questions:
            vector = embedder.embed_query(question)
            sparse = analysis.query_vector(question, analyzer, "en")
            found: dict[str, dict[str, Any]] = {s: {} for s in indexes}
            for kind in ("dense", "sparse"):
                for store, index in indexes.items():
                    started = time.perf_counter()
                    if kind == "dense":
                        found[store][kind] = index.dense_ranked(vector, LIMIT, base.chunk_strategy)
                    else:
                        found[store][kind] = index.sparse_ranked(sparse, LIMIT, base.chunk_strategy)
                    times[store][kind].append((time.perf_counter() - started) * 1000)
                equal, gap = compare(found["qdrant"][kind], found["postgres"][kind])
                same[kind] += equal
                gaps[kind] = max(gaps[kind], gap)
        for index in indexes.values():
            index.close()
        for stores in opened:
            stores.close()
    return {
        "source": str(args.source),
        "include": args.include,
        "questions": len(questions),
        "builds": builds,
        "same_top_30": same,
        "largest_score_gap": {k: float(np.round(v, 6)) for k, v in gaps.items()},
        "search_ms": {s: {k: percentiles(v) for k, v in kinds.items()} for s, kinds in times.items()},
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--include", action="append")
    parser.add_argument("--golden", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = run(args)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
