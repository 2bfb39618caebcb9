"""Calibration: fit the topic-gate floor, the semantic-cache threshold and the CRAG bands on golden
questions, and write them (with the data and date they came from) to the calibration file the query
service reads at start.

The rules pick points from distributions, never from one question:

- **topic floor**: positives are the golden `answer` questions (in a language of the index), negatives
  the golden off-topic questions plus a reference list of general-knowledge questions
  (`evals/data/off_topic_en.txt`). The floor sits a margin below the `keep` quantile of the
  positives (default: the 2nd percentile, so at most 2% of answerable questions stop at the gate);
  CRAG stays behind the gate for the on-topic questions the documents do not answer.
- **semantic-cache threshold**: negatives are pairs of *different* questions: each golden and
  reference question's nearest neighbour among the others, and each question with one word swapped
  for its opposite ("optional"/"required": a false hit there is a wrong answer); positives are
  rewordings made by generic rewrites of every golden question ("How do I" -> "How can I", a polite
  prefix, no question mark...). Vectors alone cannot separate them (the swaps score up to 0.99), so
  a hit also needs the same lexical signature (`pipelines.caching.semantic.lexical_signature`); the
  threshold is a margin above the highest negative the signature lets through.
- **CRAG bands** (`fit_crag_bands`): the graded top score of each golden question through the query
  graph, fitted by `pipelines.answering.crag.fit_bands` (answerable vs abstain questions).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.golden import GoldenQuestion, load_golden
from pipelines.caching.semantic import lexical_signature
from pipelines.guardrails.calibration import calibration_path, write_calibration
from pipelines.guardrails.topic_gate import build_centroid, centroid_path, save_centroid
from pipelines.ingestion import dense_units
from pipelines.settings import Settings

OFF_TOPIC_FILE = Path(__file__).resolve().parent / "data" / "off_topic_en.txt"
TOPIC_KEEP = 0.98  # share of answerable questions the floor must let through
TOPIC_MARGIN = 0.02
SEMANTIC_MARGIN = 0.01
SEMANTIC_BOUNDS = (0.85, 0.99)

Embed = Callable[[str], np.ndarray]


@dataclass(frozen=True)
class Fit:
    value: float
    summary: dict[str, Any]
    tradeoff: list[dict[str, float]]


def read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _share(values: np.ndarray, threshold: float, above: bool) -> float:
    if len(values) == 0:
        return float("nan")
    return float(np.mean(values >= threshold) if above else np.mean(values < threshold))


def fit_topic_floor(
    positives: np.ndarray, negatives: np.ndarray, on_topic_unanswerable: np.ndarray | None = None
) -> Fit:
    """Floor = the `TOPIC_KEEP` lower quantile of the answerable questions' similarity, minus a margin."""
    if len(positives) == 0:
        raise ValueError("the topic floor needs answerable golden questions (expected: answer)")
    floor = round(float(np.quantile(positives, 1.0 - TOPIC_KEEP, method="lower")) - TOPIC_MARGIN, 4)
    unanswerable = on_topic_unanswerable if on_topic_unanswerable is not None else np.zeros(0)
    points = sorted({floor, *(round(floor + d, 4) for d in (-0.06, -0.04, -0.02, 0.02, 0.04, 0.06, 0.08, 0.1))})
    tradeoff = [
        {
            "floor": t,
            "answered": round(_share(positives, t, True), 4),
            "off_topic_abstained": round(_share(negatives, t, False), 4),
            "unanswerable_stopped_at_gate": round(_share(unanswerable, t, False), 4),
        }
        for t in points
    ]
    summary = {
        "floor": floor,
        "answerable": len(positives),
        "off_topic": len(negatives),
        "answered_share": round(_share(positives, floor, True), 4),
        "off_topic_abstained_share": round(_share(negatives, floor, False), 4),
        "similarity_answerable": _describe(positives),
        "similarity_off_topic": _describe(negatives),
    }
    return Fit(floor, summary, tradeoff)


def _describe(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    return {k: round(float(f(values)), 4) for k, f in (("min", np.min), ("median", np.median), ("max", np.max))}


_REWRITES: list[Callable[[str], str]] = [
    lambda q: q.rstrip("?").strip(),
    lambda q: re.sub(r"^how do i\b", "How can I", q, flags=re.I),
    lambda q: re.sub(r"^how can i\b", "How do I", q, flags=re.I),
    lambda q: re.sub(r"^what is\b", "What's", q, flags=re.I),
    lambda q: re.sub(r"^what does\b", "What exactly does", q, flags=re.I),
    lambda q: re.sub(r"^can i\b", "Is it possible to", q, flags=re.I),
    lambda q: "Quick question: " + q,
    lambda q: "Please tell me: " + q[0].lower() + q[1:],
    lambda q: q + " Thanks!",
]


def paraphrases(question: str) -> list[str]:
    """Generic surface rewrites of a question (never written for one question in particular)."""
    out = {rewrite(question) for rewrite in _REWRITES}
    return sorted(p for p in out if p and p.lower() != question.lower())


# Word swaps that turn a question into a different one with almost the same words: the hard negatives
# of the semantic cache ("optional" vs "required" must never share an answer).
_OPPOSITES = [
    ("optional", "required"),
    ("enable", "disable"),
    ("add", "remove"),
    ("before", "after"),
    ("first", "last"),
    ("sync", "async"),
    ("request", "response"),
    ("client", "server"),
    ("install", "uninstall"),
    ("start", "stop"),
    ("startup", "shutdown"),
    ("increase", "decrease"),
    ("minimum", "maximum"),
    ("allow", "block"),
    ("upload", "download"),
    ("read", "write"),
    ("open", "close"),
    ("include", "exclude"),
    ("encode", "decode"),
    ("import", "export"),
    ("public", "private"),
    ("inside", "outside"),
    ("default", "custom"),
    ("header", "body"),
    ("query", "path"),
    ("get", "post"),
    ("can", "cannot"),
    ("does", "doesn't"),
    ("is", "isn't"),
    ("should", "shouldn't"),
    ("with", "without"),
    ("old", "new"),
]


def opposites(question: str) -> list[str]:
    """The question with one word swapped for its opposite, for every swappable word it holds."""
    out = []
    for a, b in _OPPOSITES:
        for x, y in ((a, b), (b, a)):
            pattern = re.compile(rf"\b{re.escape(x)}\b", re.I)
            if pattern.search(question):
                out.append(pattern.sub(y, question, count=1))
    return out


def fit_semantic_threshold(questions: Sequence[str], embed: Embed) -> Fit:
    """Threshold = a margin above the highest similarity between two different questions that the
    lexical guard lets through (other calibration questions, and each question with one word swapped
    for its opposite); the tables also show what the similarity alone would do without the guard."""
    if len(questions) < 2:
        raise ValueError("the semantic-cache threshold needs at least two distinct questions")
    vectors = np.stack([embed(q) for q in questions])
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -1.0)
    signatures = [lexical_signature(q) for q in questions]
    same = np.array([[a == b for b in signatures] for a in signatures])
    swapped = [(i, o) for i, q in enumerate(questions) for o in opposites(q)]
    swap_sims = np.array([float(vectors[i] @ embed(o)) for i, o in swapped])
    swap_same = np.array([lexical_signature(o) == signatures[i] for i, o in swapped], dtype=bool)
    negatives_any = np.concatenate([sims.max(axis=1), swap_sims])
    negatives_guarded = np.concatenate([np.where(same, sims, -1.0).max(axis=1), np.where(swap_same, swap_sims, -1.0)])
    rewrites = [(i, p) for i, q in enumerate(questions) for p in paraphrases(q)]
    para_sims = np.array([float(vectors[i] @ embed(p)) for i, p in rewrites])
    para_guarded = np.array(
        [s if lexical_signature(p) == signatures[i] else -1.0 for (i, p), s in zip(rewrites, para_sims, strict=True)]
    )
    lo, hi = SEMANTIC_BOUNDS
    threshold = round(min(hi, max(lo, float(negatives_guarded.max()) + SEMANTIC_MARGIN)), 4)
    points = sorted({threshold, *(round(t, 4) for t in np.arange(0.86, 1.0, 0.02))})
    tradeoff = [
        {
            "threshold": t,
            "paraphrase_hits": round(_share(para_guarded, t, True), 4),
            "distinct_false_hits": round(_share(negatives_guarded, t, True), 4),
            "paraphrase_hits_similarity_only": round(_share(para_sims, t, True), 4),
            "distinct_false_hits_similarity_only": round(_share(negatives_any, t, True), 4),
        }
        for t in points
    ]
    summary = {
        "threshold": threshold,
        "questions": len(questions),
        "paraphrases": len(rewrites),
        "opposite_swaps": len(swapped),
        "paraphrase_hit_share": round(_share(para_guarded, threshold, True), 4),
        "distinct_false_hit_share": round(_share(negatives_guarded, threshold, True), 4),
        "highest_distinct_similarity_guarded": round(float(negatives_guarded.max()), 4),
        "highest_distinct_similarity_unguarded": round(float(negatives_any.max()), 4),
    }
    return Fit(threshold, summary, tradeoff)


@dataclass(frozen=True)
class GradedScore:
    """One golden question's graded top score (CRAG's scale: dense cosine or reranker probability)."""

    score: float | None
    scale: str  # "dense" or "rerank"
    answerable: bool


def fit_crag_bands(graded: Sequence[GradedScore]) -> dict[str, Any]:
    """The CRAG bands per scale, fitted on graded scores by `pipelines.answering.crag.fit_bands`."""
    from pipelines.answering.crag import fit_bands

    out: dict[str, Any] = {}
    names = {"dense": ("lower", "upper"), "rerank": ("rerank_lower", "rerank_upper")}
    for scale, (low_key, high_key) in names.items():
        rows = [g for g in graded if g.scale == scale and g.score is not None]
        if not any(g.answerable for g in rows):
            continue
        fit = fit_bands([float(g.score) for g in rows if g.score is not None], [g.answerable for g in rows])
        out[low_key], out[high_key] = fit.bands.lower, fit.bands.upper
        out[f"{scale}_summary"] = {
            "answerable": fit.answerable,
            "unanswerable": fit.unanswerable,
            "answered_share": round(fit.answered_share, 4),
            "abstained_share": round(fit.abstained_share, 4),
            "direct_share": round(fit.direct_share, 4),
        }
    return out


def calibration_questions(paths: Sequence[Path], languages: Sequence[str]) -> list[GoldenQuestion]:
    """Golden questions in a language of the index (others are the language gate's business)."""
    questions = [q for p in paths for q in load_golden(p)]
    return [q for q in questions if not languages or q.lang in languages]


def golden_record(paths: Sequence[Path]) -> list[dict[str, Any]]:
    return [{"path": str(p.resolve()), "sha256": sha256_file(p), "questions": len(load_golden(p))} for p in paths]


def calibrate(
    service: Any,
    settings: Settings,
    golden: Sequence[Path],
    off_topic: Path = OFF_TOPIC_FILE,
    grade: Callable[[GoldenQuestion], GradedScore | None] | None = None,
    output: Path | None = None,
) -> dict[str, Any]:
    """Fit everything on the active index of `service` (a QueryService) and write the calibration file."""
    version, index = service.active()
    embedder = service.embedder
    centroid = build_centroid(
        index, settings.chunk_strategy, embedder, settings.data_dir / "embedding_cache.sqlite", True
    )
    if centroid is None:
        raise ValueError(f"index {version.version} has no chunks of strategy {settings.chunk_strategy!r}")
    centroid_file = centroid_path(settings.data_dir, version.version, settings.chunk_strategy)
    save_centroid(centroid_file, centroid)

    questions = calibration_questions(golden, version.languages)
    reference = read_lines(off_topic)
    cached: dict[str, np.ndarray] = {}

    def embed(text: str) -> np.ndarray:
        if text not in cached:
            cached[text] = np.asarray(embedder.embed_query(text), dtype=np.float32)
        return cached[text]

    def sims(texts: Sequence[str]) -> np.ndarray:
        return np.array([float(embed(t) @ centroid) for t in texts])

    answerable = [q.question for q in questions if q.expected == "answer"]
    off = [q.question for q in questions if q.type == "off-topic"] + reference
    unanswerable = [q.question for q in questions if q.expected == "abstain" and q.type != "off-topic"]
    topic = fit_topic_floor(sims(answerable), sims(off), sims(unanswerable))
    distinct = list(dict.fromkeys([q.question for q in questions if q.expected != "clarify"] + reference))
    semantic = fit_semantic_threshold(distinct, embed)

    crag: dict[str, Any] = {"fitted": False, "reason": "no grader given"}
    if grade is not None:
        graded = [g for g in (grade(q) for q in questions if q.expected != "clarify") if g is not None]
        bands = fit_crag_bands(graded)
        crag = {"fitted": bool(bands), **bands} if bands else {"fitted": False, "reason": "no graded scores"}

    record = {
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "index_version": version.version,
        "embedding_fingerprint": version.fingerprint,
        # MaxSim over unit vectors scores higher than one vector per chunk: the CRAG dense bands hold
        # only for indexes built with the same setting (pipelines/guardrails/calibration.py warns otherwise).
        "dense_unit_tokens": int(version.chunk_settings.get("dense_unit_tokens", 0)),
        "dense_units": dense_units.described(version.chunk_settings),
        "strategy": settings.chunk_strategy,
        "source": version.source,
        "languages": list(version.languages),
        "data": {
            "golden": golden_record(golden),
            "off_topic": {
                "path": str(off_topic.resolve()),
                "sha256": sha256_file(off_topic),
                "questions": len(reference),
            },
        },
        "topic_gate": {**topic.summary, "centroid_file": str(centroid_file), "tradeoff": topic.tradeoff},
        "semantic_cache": {**semantic.summary, "tradeoff": semantic.tradeoff},
        "crag": crag,
    }
    write_calibration(output or calibration_path(settings), record)
    return record


def service_grader(service: Any) -> Callable[[GoldenQuestion], GradedScore | None]:
    """Grade a golden question through the query graph: CRAG's initial graded score from the reply. An
    unanswerable question counts only when the graph without CRAG would answer it."""

    def grade(question: GoldenQuestion) -> GradedScore | None:
        if question.expected != "answer":
            # An unanswerable question the graph already answers `no_answer` without CRAG (coverage, the
            # extractive threshold) gives the bands nothing to catch: fitting on it would only raise them.
            without = service.answer(question.question, variants={"crag": "off"})
            if without.get("status") != "answered":
                return None
        reply = service.answer(question.question, variants={"crag": "graded"})
        trace = reply.get("crag") or {}
        score = (trace.get("scores") or {}).get("initial")
        if reply.get("status") in ("refused", "clarify") or "scale" not in trace:
            return None
        return GradedScore(score, str(trace["scale"]), question.expected == "answer")

    return grade


def format_tradeoff(record: dict[str, Any]) -> str:
    """The trade-off (answered vs abstained) around each chosen point, as text."""
    lines = []
    topic = record["topic_gate"]
    lines.append(
        f"topic gate floor {topic['floor']}: answered {topic['answered_share']:.0%} of {topic['answerable']} "
        f"answerable, abstained on {topic['off_topic_abstained_share']:.0%} of {topic['off_topic']} off-topic"
    )
    lines.append("  floor   answered  off-topic abstained  unanswerable stopped at gate")
    for row in topic["tradeoff"]:
        mark = " <" if row["floor"] == topic["floor"] else ""
        lines.append(
            f"  {row['floor']:.4f}  {row['answered']:>7.0%}  {row['off_topic_abstained']:>19.0%}"
            f"  {row['unanswerable_stopped_at_gate']:>28.0%}{mark}"
        )
    sem = record["semantic_cache"]
    lines.append(
        f"semantic cache threshold {sem['threshold']}: {sem['paraphrase_hit_share']:.0%} of {sem['paraphrases']} "
        f"rewordings hit, {sem['distinct_false_hit_share']:.0%} false hits among different questions and "
        f"{sem['opposite_swaps']} opposite-word swaps (highest similarity of two different questions: "
        f"{sem['highest_distinct_similarity_unguarded']} by vectors alone)"
    )
    lines.append("  threshold  rewordings hit  false hits  | similarity alone: rewordings hit  false hits")
    for row in sem["tradeoff"]:
        mark = " <" if row["threshold"] == sem["threshold"] else ""
        lines.append(
            f"  {row['threshold']:.4f}  {row['paraphrase_hits']:>14.0%}  {row['distinct_false_hits']:>10.0%}"
            f"  | {row['paraphrase_hits_similarity_only']:>31.0%}  {row['distinct_false_hits_similarity_only']:>10.0%}{mark}"
        )
    crag = record["crag"]
    if crag.get("fitted"):
        for scale, low, high in (("dense", "lower", "upper"), ("rerank", "rerank_lower", "rerank_upper")):
            if low in crag:
                s = crag[f"{scale}_summary"]
                lines.append(
                    f"CRAG {scale} bands [{crag[low]}, {crag[high]}]: answered {s['answered_share']:.0%} of "
                    f"{s['answerable']} answerable, abstained on {s['abstained_share']:.0%} of {s['unanswerable']} "
                    "unanswerable that the graph would answer without CRAG"
                )
    else:
        lines.append(f"CRAG bands not fitted: {crag.get('reason')}")
    return "\n".join(lines)


def outcomes(service: Any, questions: Sequence[GoldenQuestion]) -> dict[str, Any]:
    """Replies by expected kind, through a service that reads the calibration: the right kind of
    reply is `answered` for answer, `no_answer` for abstain and `clarify` for clarify questions."""
    right = {"answer": "answered", "abstain": "no_answer", "clarify": "clarify"}
    table: dict[str, dict[str, int]] = {}
    for question in questions:
        status = service.answer(question.question)["status"]
        row = table.setdefault(question.expected, {})
        row[status] = row.get(status, 0) + 1
    return {
        kind: {
            "questions": sum(row.values()),
            "right_share": round(row.get(right[kind], 0) / sum(row.values()), 4),
            **row,
        }
        for kind, row in sorted(table.items())
    }
