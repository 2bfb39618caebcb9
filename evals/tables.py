"""Markdown tables from `ragline eval` JSON outputs, for docs/benchmarks.md and docs/decisions/.

A retrieval table has a row per mode and half: `all` (every question run), `tuning` and `held_out`.

python -m evals.tables retrieval fastapi_en.heading.json ...
python -m evals.tables beir scifact_train.json ...
python -m evals.tables paired A.json B.json [MODE]   (two `eval beir` runs on the same qrels: B minus A)
python -m evals.tables paired-retrieval A.json B.json [MODE]   (two `eval retrieval` runs: evidence@5, B minus A)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from evals.stats import mean, paired_bootstrap_ci, sign_test


def report_halves(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-mode blocks of a retrieval report by half: `all` (every question run), then `tuning` and
    `held_out`; a run restricted to one half (`--half`) is that half alone, and a report written before
    the halves were recorded is `all` alone."""
    half = report.get("half", "all")
    if half != "all":
        return {half: report["modes"]}
    return {"all": report["modes"], **{h: block["modes"] for h, block in report.get("halves", {}).items()}}


def retrieval_rows(path: Path) -> list[str]:
    report: dict[str, Any] = json.loads(path.read_text())
    index = report["index"]
    halves = report_halves(report)
    rows = []
    for mode in report["modes"]:
        for half, modes in halves.items():
            m = modes[mode]
            head = f"| {path.stem} | {index['strategy']} | {index.get('embedding_model', '')} | "
            head += f"{index.get('fusion', '')} | {mode} | {half} | {m['n']} |"
            if not m["n"]:
                rows.append(head + " — |" * 8)
                continue
            rows.append(
                f"{head} {m['evidence@1']:.3f} | {m['evidence@5']:.3f} | {m['evidence@10']:.3f} | "
                f"{m['page@5']:.3f} | {m['mrr@10']:.3f} | {m['latency_ms']['p50']:.0f} | {', '.join(m['misses'])} | "
                f"{near_cutoff(m)} |"
            )
    return rows


def near_cutoff(mode: dict[str, Any]) -> str:
    """The questions whose evidence is 5th (just in) or 6th (just out), with the rank: "-" for outputs
    written before the ranks were recorded."""
    if "near_cutoff" not in mode:
        return "-"
    return ", ".join(f"{q} ({mode['evidence_ranks'][q]})" for q in mode["near_cutoff"])


def beir_rows(path: Path) -> list[str]:
    report: dict[str, Any] = json.loads(path.read_text())
    qrels = Path(report["index"].get("qrels", "")).name
    return [
        f"| {path.stem} | {qrels} | {report['index'].get('fusion', '')} | {mode} | {m['n']} | "
        f"{m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {m['latency_ms']['p50']:.0f} |"
        for mode, m in report["modes"].items()
    ]


HEADERS = {
    "retrieval": "| run | strategy | model | fusion | mode | half | n | ev@1 | ev@5 | ev@10 | page@5 | mrr@10 | p50 ms "
    + "| misses@5 | 5th or 6th |\n"
    + "|---" * 15
    + "|",
    "beir": "| run | qrels | fusion | mode | n | nDCG@10 | recall@100 | p50 ms |\n" + "|---" * 8 + "|",
}


def paired_row(a_path: Path, b_path: Path, mode: str = "hybrid") -> str:
    """nDCG@10 of B minus A over the claims both runs scored, with the paired bootstrap 95% interval
    and the exact sign test that `ragline eval ab` reports."""
    runs = [json.loads(p.read_text()).get("ndcg@10_per_query", {}).get(mode) for p in (a_path, b_path)]
    if not runs[0] or not runs[1]:
        raise ValueError(f"both files need per-claim nDCG@10 of mode {mode!r} (an `eval beir` output of this version)")
    queries = sorted(set(runs[0]) & set(runs[1]))
    if len(queries) != len(runs[0]) or len(queries) != len(runs[1]):
        raise ValueError("the two runs scored different claims: compare runs on the same qrels")
    a, b = [runs[0][q] for q in queries], [runs[1][q] for q in queries]
    return f"| {a_path.stem} | {b_path.stem} | {mode} | {len(queries)} | {_compared(a, b)}"


def _compared(a: list[float], b: list[float]) -> str:
    """The cells both paired tables end with: A's mean, B's, the difference, its paired bootstrap 95%
    interval and the exact sign test."""
    low, high = paired_bootstrap_ci(a, b)
    return (
        f"{mean(a):.4f} | {mean(b):.4f} | {mean(b) - mean(a):+.4f} | [{low:+.4f}, {high:+.4f}] | "
        f"{sign_test(a, b):.3g} |"
    )


def paired_lane_rows(a_path: Path, b_path: Path, route: str = "question_and_source") -> list[str]:
    """Per question language and metric of `eval lanes` (own@5, original@5): B minus A over the questions
    both runs scored, with the paired bootstrap 95% interval and the exact sign test."""
    runs = [json.loads(p.read_text())["routes"].get(route) for p in (a_path, b_path)]
    if not runs[0] or not runs[1]:
        raise ValueError(f"both files need route {route!r}")
    rows = []
    for lang in sorted(set(runs[0]) & set(runs[1])):
        per = [run[lang].get("per_question") for run in runs]
        if not per[0] or not per[1]:
            raise ValueError("both files need per-question outcomes (an `eval lanes` output of this version)")
        ids = sorted(set(per[0]) & set(per[1]))
        for metric in ("own@5", "original@5"):
            a, b = [float(per[0][q][metric]) for q in ids], [float(per[1][q][metric]) for q in ids]
            rows.append(f"| {lang} | {metric} | {len(ids)} | {_compared(a, b)}")
    return rows


def paired_retrieval_rows(a_path: Path, b_path: Path, mode: str = "hybrid") -> list[str]:
    """evidence@5 of `eval retrieval` run B minus run A (two indexes: an ingestion setting changed), per half,
    over the `answer` questions both runs scored, with the paired bootstrap 95% interval and the sign test."""
    blocks = [report_halves(json.loads(p.read_text())) for p in (a_path, b_path)]
    rows = []
    for half in [h for h in blocks[0] if h in blocks[1]]:
        ranks = [block[half].get(mode, {}).get("evidence_ranks") for block in blocks]
        if ranks[0] is None or ranks[1] is None:
            raise ValueError(f"both files need mode {mode!r} with per-question evidence ranks")
        ids = sorted(set(ranks[0]) & set(ranks[1]))
        a, b = ([float(r[q] is not None and r[q] <= 5) for q in ids] for r in ranks)
        if ids:
            rows.append(f"| {half} | {mode} | evidence@5 | {len(ids)} | {_compared(a, b)}")
    return rows


# Paired comparisons of two runs: rows of the pair, the default of their optional third argument, header.
PAIRED = {
    "paired": (
        lambda a, b, mode: [paired_row(a, b, mode)],
        "hybrid",
        "| a | b | mode | n | nDCG@10 a | nDCG@10 b | b - a | 95% CI (paired bootstrap) | sign test p |",
    ),
    "paired-retrieval": (
        paired_retrieval_rows,
        "hybrid",
        "| half | mode | metric | n | a | b | b - a | 95% CI (paired bootstrap) | sign test p |",
    ),
    "paired-lanes": (
        paired_lane_rows,
        "question_and_source",
        "| language | metric | n | a | b | b - a | 95% CI (paired bootstrap) | sign test p |",
    ),
}


def main(argv: list[str]) -> int:
    kinds = sorted([*HEADERS, *PAIRED])
    if not argv or argv[0] not in kinds or len(argv) < 2:
        print(__doc__, file=sys.stderr)
        print(f"evals.tables: give one of {', '.join(kinds)} and the reports", file=sys.stderr)
        return 2
    if argv[0] in PAIRED:
        rows_of, default, header = PAIRED[argv[0]]
        try:
            rows = rows_of(Path(argv[1]), Path(argv[2]), (argv[3:4] or [default])[0])
        except ValueError as exc:
            print(f"evals.tables {argv[0]}: {exc}", file=sys.stderr)
            return 2
        print(header)
        print("|---" * (header.count(" | ") + 1) + "|")
        print("\n".join(rows))
        return 0
    kind, paths = argv[0], [Path(p) for p in argv[1:]]
    rows = [r for p in paths for r in (retrieval_rows(p) if kind == "retrieval" else beir_rows(p))]
    print("\n".join([HEADERS[kind], *rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
