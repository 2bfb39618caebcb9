"""Run golden questions through the query graph with a chosen generator and report how its answers
came out: statuses, sentences cited by the model itself vs citations attached after generation,
sentences dropped (no supporting passage), citations removed by verification or moved to the passage
that supports their sentence (`recited`), the golden facts present in answers, and latency.

    RAGLINE_HOME=<data dir of the index> RAGLINE_LLM_API_BASE=http://127.0.0.1:8080/v1 \\
        python -m evals.generation_run --golden ../shared/golden/fastapi_en.jsonl --limit 10 \\
        --variants '{"generator": "litellm"}' [--top-k 3] [--out run.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.golden import load_golden, normalise
from pipelines.logs import configure_logging
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from query_graph.service import QueryFailed, QueryService

EXPECTED_STATUS = {"answer": "answered", "abstain": "no_answer", "clarify": "clarify"}


def right_kind(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Per expected kind: how many got the right kind of reply (README scoring rules)."""
    out = {}
    for kind, status in EXPECTED_STATUS.items():
        mine = [r for r in rows if r["expected"] == kind]
        if mine:
            out[kind] = f"{sum(r['status'] == status for r in mine)}/{len(mine)}"
    return out


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=10, help="first N questions (0: all)")
    parser.add_argument("--variants", type=json.loads, default={"generator": "litellm"})
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    configure_logging("WARNING")
    settings = Settings()
    stores = open_stores(settings)
    rows: list[dict[str, Any]] = []
    try:
        service = QueryService(settings, stores)
        for q in load_golden(args.golden)[: args.limit or None]:
            started = time.perf_counter()
            try:
                reply = service.answer(q.question, top_k=args.top_k, variants=args.variants)
            except QueryFailed as exc:
                rows.append({"id": q.id, "expected": q.expected, "error": exc.code, "message": exc.message[:200]})
                continue
            seconds = time.perf_counter() - started
            verification = reply.get("verification", {})
            sentences = reply["answer"].count("[C:") if reply["status"] == "answered" else 0
            said = normalise(reply["answer"]) if reply["status"] == "answered" else ""
            facts = [float(normalise(f) in said) for f in q.facts] if q.expected == "answer" and q.facts else []
            problems = verification.get("unsupported", [])
            rows.append(
                {
                    "id": q.id,
                    "expected": q.expected,
                    "status": reply["status"],
                    "seconds": round(seconds, 2),
                    "cited_sentences": sentences,
                    "attached_citations": verification.get("attached_citations", 0),
                    "dropped_sentences": verification.get("dropped_sentences", 0),
                    "unsupported": len(problems),
                    "recited": sum(p.get("action") == "recited" for p in problems),
                    "facts_present": _mean(facts),
                    "provider": (reply.get("provider") or {}).get("model"),
                    "crag_action": (reply.get("crag") or {}).get("action"),
                    "crag_score": ((reply.get("crag") or {}).get("scores") or {}).get("initial"),
                    "answer": reply["answer"],
                }
            )
    finally:
        stores.close()
    done = [r for r in rows if "status" in r]
    report = {
        "questions": len(rows),
        "errors": {r["id"]: r["error"] for r in rows if "error" in r},
        "statuses": {s: sum(r["status"] == s for r in done) for s in {r["status"] for r in done}},
        "right_kind": right_kind(done),
        "cited_sentences": sum(r["cited_sentences"] for r in done),
        "attached_citations": sum(r["attached_citations"] for r in done),
        "dropped_sentences": sum(r["dropped_sentences"] for r in done),
        "unsupported_citations": sum(r["unsupported"] for r in done),
        "recited_citations": sum(r["recited"] for r in done),
        "facts_present": _mean([r["facts_present"] for r in done if r["facts_present"] is not None]),
        "seconds_p50": round(float(np.percentile([r["seconds"] for r in done], 50)), 2) if done else None,
        "variants": args.variants,
        "top_k": args.top_k,
        "rows": rows,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
