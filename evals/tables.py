"""Markdown tables from `ragline eval` JSON outputs, for evals/RESULTS.md.

python -m evals.tables retrieval evals/results/fastapi_en.heading.json ...
python -m evals.tables beir evals/results/scifact_train.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def retrieval_rows(path: Path) -> list[str]:
    report: dict[str, Any] = json.loads(path.read_text())
    index = report["index"]
    rows = []
    for mode, m in report["modes"].items():
        rows.append(
            f"| {path.stem} | {index['strategy']} | {index.get('embedding_model', '')} | {index.get('fusion', '')} | "
            f"{mode} | {m['n']} | {m['evidence@1']:.3f} | {m['evidence@5']:.3f} | {m['evidence@10']:.3f} | "
            f"{m['page@5']:.3f} | {m['mrr@10']:.3f} | {m['latency_ms']['p50']:.0f} | {', '.join(m['misses'])} |"
        )
    return rows


def beir_rows(path: Path) -> list[str]:
    report: dict[str, Any] = json.loads(path.read_text())
    qrels = Path(report["index"].get("qrels", "")).name
    return [
        f"| {path.stem} | {qrels} | {report['index'].get('fusion', '')} | {mode} | {m['n']} | "
        f"{m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {m['latency_ms']['p50']:.0f} |"
        for mode, m in report["modes"].items()
    ]


HEADERS = {
    "retrieval": "| run | strategy | model | fusion | mode | n | ev@1 | ev@5 | ev@10 | page@5 | mrr@10 | p50 ms | misses@5 |\n"
    + "|---" * 13
    + "|",
    "beir": "| run | qrels | fusion | mode | n | nDCG@10 | recall@100 | p50 ms |\n" + "|---" * 8 + "|",
}


def main(argv: list[str]) -> int:
    kind, paths = argv[0], [Path(p) for p in argv[1:]]
    rows = [r for p in paths for r in (retrieval_rows(p) if kind == "retrieval" else beir_rows(p))]
    print("\n".join([HEADERS[kind], *rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
