"""Benchmark: retrieval and rerank latency on the active index (the issue 4 speed targets).

    RAGLINE_HOME=<data dir of the index> python -m evals.bench.query \\
        [--golden ../shared/golden/fastapi_en.jsonl] [--rounds 5] [--out results.json]

In one run, each question of the golden file is timed, interleaved so load drifts hit both alike:
- `embed`: the query embedding alone;
- `retrieval`: query embedding + dense + BM25 + fusion, the hybrid retrieval nodes of the graph
  (`RetrievalPlan.run`, with the settings' BM25 engine and fusion, keeping `top_k` chunks as the
  default graph does without a reranker; with BM25 feedback and the bridge hop when the settings turn
  them on);
- `retrieval_without_feedback`: the same with BM25 feedback off, what its second BM25 search costs;
- `rerank_30`: the cross-encoder over the top 30 fused candidates of the question;
- `answer_uncached`, `answer_cache_hit`: the whole query graph (`QueryService.answer`, the default variants),
  first with the answer cache emptied, then served from it (`whole_answers`);
  `--rerank-tokens 128,96,64` times one reranker per input budget, interleaved, as `rerank_30@<tokens>`.
Reported: p50/p95 of each, the retrieval/embedding p50 ratio, and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.golden import load_golden
from pipelines.logs import configure_logging
from pipelines.profiles import open_stores
from pipelines.retrieval.language_lanes import lanes
from pipelines.retrieval.rerank import CrossEncoderReranker
from pipelines.retrieval.retriever import RetrievalPlan, hit_rules, rule_settings
from pipelines.settings import Settings
from query_graph.service import QueryService

DEFAULT_GOLDEN = Path(__file__).resolve().parent.parent.parent / "shared" / "golden" / "fastapi_en.jsonl"


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(float(np.percentile(values, 50)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
        "max": round(max(values), 3),
    }


def plan_for(service: QueryService, depth: int, feedback: bool | None = None) -> RetrievalPlan:
    """The default graph's hybrid retrieval plan; `feedback` overrides whether BM25 feedback runs."""
    s = service.settings
    version, index = service.active()
    overridden = {} if feedback is None else {"bm25_feedback": "on" if feedback else "off"}
    return RetrievalPlan(
        retrieval="hybrid",
        bm25_engine=s.bm25_engine,
        fusion=s.fusion,
        embedder=service.embedder,
        vector_index=index,
        bm25_memory=service.back.bm25_memory,
        index_version=version.version,
        strategy=s.chunk_strategy,
        # The benchmark's questions are English and its index one language: a single lane.
        lanes=lanes(s.language_route, "en", version.languages, s.source_language, s.language_filter),
        candidates=max(s.candidates, depth),
        keep=depth,
        rrf_k=s.rrf_k,
        fusion_weights=tuple(s.fusion_weights),
        bm25_analyzer=version.chunk_settings.get("bm25_analyzer", "plain"),
        hubness=(
            service.back.hubness.source(version.version, index, s.chunk_strategy, service.embedder)
            if s.dense_hubness == "csls"
            else None
        ),
        sentences=(
            service.back.sentence_units.source(version.version, index, s.chunk_strategy, service.embedder)
            if s.dense_sentences != "off"
            else None
        ),
        sentence_combine=s.dense_sentences,
        **hit_rules("hybrid", s.top_k, **{**rule_settings(s), **overridden}),
    )


def rerankers(service: QueryService, budgets: list[int]) -> dict[str, Any]:
    """The service's reranker as `rerank_30`, or one per token budget as `rerank_30@<budget>`."""
    if not budgets:
        return {"rerank_30": service.back.reranker()}
    s = service.settings
    return {f"rerank_30@{b}": CrossEncoderReranker(s.reranker_model, s.reranker_path, b) for b in budgets}


def run(service: QueryService, questions: list[str], rounds: int, depth: int, budgets: list[int]) -> dict[str, Any]:
    # Retrieval as the default graph runs it (rerank off: the top_k fused chunks are read whole);
    # the reranker's candidates come from a plan that keeps `depth` of them.
    plan = plan_for(service, service.settings.top_k)
    # The same retrieval without BM25 feedback, timed beside it: what the feedback's second search costs.
    plain = plan_for(service, service.settings.top_k, feedback=False)
    deep = plan_for(service, depth)
    scorers = rerankers(service, budgets)
    for q in questions[:3]:  # warm-up: sessions, caches, first-query allocations
        plan.run(q)
        plain.run(q)
        for reranker in scorers.values():
            reranker.scores(q, [c.chunk.generation_text for c in deep.run(q)[:depth]])
    timings: dict[str, list[float]] = {
        "embed": [],
        "retrieval": [],
        "retrieval_without_feedback": [],
        **{name: [] for name in scorers},
    }
    pairs: list[int] = []
    for _ in range(rounds):
        for q in questions:
            started = time.perf_counter()
            service.embedder.embed_query(q)
            timings["embed"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            candidates = plan.run(q)
            timings["retrieval"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            plain.run(q)
            timings["retrieval_without_feedback"].append((time.perf_counter() - started) * 1000)
        for q in questions:
            passages = [c.chunk.generation_text for c in deep.run(q)[:depth]]
            pairs.append(len(passages))
            for name, reranker in scorers.items():
                started = time.perf_counter()
                reranker.scores(q, passages)
                timings[name].append((time.perf_counter() - started) * 1000)
    timings.update(whole_answers(service, questions, rounds))
    out: dict[str, Any] = {name: summary(values) for name, values in timings.items() if values}
    out["retrieval_over_embed_p50"] = round(out["retrieval"]["p50"] / out["embed"]["p50"], 3)
    out["without_feedback_over_embed_p50"] = round(out["retrieval_without_feedback"]["p50"] / out["embed"]["p50"], 3)
    out["rerank_pairs_mean"] = round(sum(pairs) / len(pairs), 2)
    out["last_candidates"] = len(candidates)
    return out


def whole_answers(service: QueryService, questions: list[str], rounds: int) -> dict[str, list[float]]:
    """The whole query graph per question, as the server runs it (`QueryService.answer`, default variants):
    `answer_uncached` in the first round, the answer cache emptied before it; `answer_cache_hit` in the later
    rounds, for the replies the exact cache served (refusals and clarifications are never cached)."""
    service.stores.cache.flush_prefix(service.settings.cache_prefix)
    out: dict[str, list[float]] = {"answer_uncached": [], "answer_cache_hit": []}
    for round_ in range(rounds):
        for q in questions:
            started = time.perf_counter()
            reply = service.answer(q)
            elapsed = (time.perf_counter() - started) * 1000
            if round_ == 0:
                out["answer_uncached"].append(elapsed)
            elif reply["cache"] == "hit":
                out["answer_cache_hit"].append(elapsed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, default=DEFAULT_GOLDEN)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=30, help="candidates the reranker scores")
    parser.add_argument("--rerank-tokens", default="", help="input budgets to compare, e.g. 128,96,64")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    configure_logging("WARNING")
    settings = Settings()
    stores = open_stores(settings)
    try:
        service = QueryService(settings, stores)
        questions = [q.question for q in load_golden(args.golden)]
        load_before = os.getloadavg()
        budgets = [int(b) for b in args.rerank_tokens.split(",") if b.strip()]
        result = run(service, questions, args.rounds, args.depth, budgets)
        version, index = service.active()
        result.update(
            {
                "index": {"content_version": version.version, "chunks": index.count()},
                "questions": len(questions),
                "rounds": args.rounds,
                "bm25_engine": settings.bm25_engine,
                "fusion": settings.fusion,
                "rerank_max_tokens": settings.rerank_max_tokens,
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "load_avg_before": [round(x, 2) for x in load_before],
                    "load_avg_after": [round(x, 2) for x in os.getloadavg()],
                },
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    finally:
        stores.close()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
