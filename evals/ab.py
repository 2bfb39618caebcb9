"""`eval ab`: the same golden questions under each variant of a node, compared with honest statistics.

Each `--node NAME=a,b,...` is compared one factor at a time: the first variant is the baseline, every
other node keeps its configured default. Per-question outcomes are paired by question, so every
difference comes with a paired bootstrap 95% interval and an exact sign test. Every figure and comparison
is reported over all the questions run and, beside it, over each half of the held-out protocol's split
(`halves`): a decision is read off the `tuning` half, and `held_out` says whether it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.answers import AnswerRecord, AnswerRun
from evals.golden import HALVES
from evals.stats import latency_summary, mean, paired_bootstrap_ci, sign_test

# metric name -> how to read it off one question's record (None: not defined for that question)
METRICS: dict[str, Any] = {
    "reply_kind_correct": lambda r: float(r.kind_correct),
    "facts_present": lambda r: r.facts_present,
    "evidence_in_answer": lambda r: r.evidence_in_answer,
    "evidence@5": lambda r: r.evidence5,
    "page@5": lambda r: r.page5,
    "mrr": lambda r: r.mrr,
    "citation_validity": lambda r: r.citation_validity,
    "quote_support": lambda r: r.quote_support,
    # How long the answer is: its cited sentences (a code block's lines are one), answered replies only.
    "answer_sentences": lambda r: r.sentences,
}


@dataclass(frozen=True)
class NodeVariants:
    node: str
    variants: list[str]

    @classmethod
    def parse(cls, text: str) -> NodeVariants:
        node, _, values = text.partition("=")
        variants = [v.strip() for v in values.split(",") if v.strip()]
        if not node.strip() or len(variants) < 2:
            raise ValueError(f"--node {text!r}: expected NAME=variant_a,variant_b[,...]")
        return cls(node.strip(), variants)

    def labels(self) -> list[str]:
        return [f"{self.node}={v}" for v in self.variants]


def variant_metrics(run: AnswerRun) -> dict[str, Any]:
    records = run.records
    out: dict[str, Any] = {"n": len(records)}
    for name, read in METRICS.items():
        values = [v for v in (read(r) for r in records) if v is not None]
        out[name] = round(mean(values), 4) if values else None
    out["latency_ms"] = latency_summary([r.timings_ms.get("total", 0.0) for r in records if not r.error])
    out["node_latency_ms"] = node_latency(records)
    out["errors"] = sum(1 for r in records if r.error)
    return out


def node_latency(records: Sequence[AnswerRecord]) -> dict[str, dict[str, float]]:
    nodes = sorted({n for r in records for n in r.timings_ms})
    return {n: latency_summary([r.timings_ms[n] for r in records if n in r.timings_ms]) for n in nodes}


def compare(a: AnswerRun, b: AnswerRun, label_a: str, label_b: str, seed: int = 0) -> list[dict[str, Any]]:
    by_id_b = {r.id: r for r in b.records}
    rows = []
    for name, read in METRICS.items():
        pairs = [
            (read(ra), read(by_id_b[ra.id]))
            for ra in a.records
            if ra.id in by_id_b and read(ra) is not None and read(by_id_b[ra.id]) is not None
        ]
        if not pairs:
            continue
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        low, high = paired_bootstrap_ci(xs, ys, seed=seed)
        rows.append(
            {
                "metric": name,
                "a": label_a,
                "b": label_b,
                "n": len(pairs),
                "value_a": round(mean(xs), 4),
                "value_b": round(mean(ys), 4),
                "diff": round(mean(ys) - mean(xs), 4),
                "ci95": [round(low, 4), round(high, 4)],
                "p_value": round(sign_test(xs, ys), 6),
            }
        )
    return rows


def latency_deltas(a: dict[str, Any], b: dict[str, Any], label_a: str, label_b: str) -> dict[str, Any]:
    """p50 of each node under b minus under a, in ms (nodes only one side has show its own p50)."""
    nodes = sorted(set(a["node_latency_ms"]) | set(b["node_latency_ms"]))
    deltas = {}
    for n in nodes:
        pa = a["node_latency_ms"].get(n, {}).get("p50", 0.0)
        pb = b["node_latency_ms"].get(n, {}).get("p50", 0.0)
        deltas[n] = round(pb - pa, 3)
    return {"a": label_a, "b": label_b, "p50_delta_ms": deltas}


def ab_report(
    runs: dict[str, AnswerRun], nodes: Sequence[NodeVariants], half: str = "all", halves: Sequence[str] = HALVES
) -> dict[str, Any]:
    """Variants and comparisons over every question run, and (`halves`) the same blocks per half."""
    report = _ab_blocks(runs, nodes)
    report["half"] = half
    report["halves"] = {h: _ab_blocks({k: r.of_half(h) for k, r in runs.items()}, nodes) for h in halves}
    return report


def _ab_blocks(runs: dict[str, AnswerRun], nodes: Sequence[NodeVariants]) -> dict[str, Any]:
    variants = {label: variant_metrics(run) for label, run in runs.items()}
    comparisons: list[dict[str, Any]] = []
    latency: list[dict[str, Any]] = []
    for node in nodes:
        base, *others = node.labels()
        for other in others:
            comparisons.extend(compare(runs[base], runs[other], base, other))
            latency.append(latency_deltas(variants[base], variants[other], base, other))
    return {"variants": variants, "comparisons": comparisons, "node_latency_deltas": latency}


def markdown(report: dict[str, Any], title: str, command: str) -> str:
    """The report as Markdown: each variant's figures and each comparison over all the questions run and
    per half (a report written before the halves were recorded: all only)."""
    lines = [f"# {title}", "", f"Command: `{command}`", ""]
    half = report.get("half", "all")
    # A run restricted to one half (`--half`): its figures over every question run are that half's.
    blocks = {"all": report, **report.get("halves", {})} if half == "all" else {half: report}
    names = list(report["variants"])
    metrics = [m for m in METRICS if any(report["variants"][v].get(m) is not None for v in names)]
    columns = [(v, h) for v in names for h in blocks]
    lines += ["| metric | " + " | ".join(f"{v} ({h})" for v, h in columns) + " |", "|---|" + "---|" * len(columns)]
    lines.append("| n | " + " | ".join(_fmt(blocks[h]["variants"][v]["n"]) for v, h in columns) + " |")
    for m in metrics:
        lines.append(f"| {m} | " + " | ".join(_fmt(blocks[h]["variants"][v].get(m)) for v, h in columns) + " |")
    lines.append(
        "| latency p50 ms | "
        + " | ".join(_fmt(blocks[h]["variants"][v]["latency_ms"]["p50"]) for v, h in columns)
        + " |"
    )
    lines += [
        "",
        "| metric | half | a | b | n | diff (b - a) | 95% CI | sign test p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted(
        ((c, h) for h, block in blocks.items() for c in block["comparisons"]),
        key=lambda row: (list(METRICS).index(row[0]["metric"]), row[0]["b"], list(blocks).index(row[1])),
    )
    for c, h in rows:
        verdict = "" if c["ci95"][0] > 0 or c["ci95"][1] < 0 else " (within noise)"
        lines.append(
            f"| {c['metric']} | {h} | {c['a']} | {c['b']} | {c['n']} | {c['diff']:+.4f}{verdict} | "
            f"[{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}] | {c['p_value']:.4g} |"
        )
    for d in report["node_latency_deltas"]:
        lines += ["", f"Per-node p50 latency, {d['b']} minus {d['a']} (ms):", ""]
        lines += ["| node | delta ms |", "|---|---|"]
        lines += [f"| {n} | {v:+.1f} |" for n, v in d["p50_delta_ms"].items()]
    return "\n".join(lines) + "\n"


def _fmt(value: Any) -> str:
    return "—" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))
