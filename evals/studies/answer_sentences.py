"""Fit and judge the `asked` sentence selection (pipelines/answering/asked.py) on XQuAD English.

Every XQuAD question has its answer as a span of one paragraph; its article's five paragraphs are the
passages (in the article's order, as `evals/studies/sentence_ranking.py` has them). Questions split by
`pipelines.golden_sets.half_of` of their XQuAD id: the model is fitted on `tuning` only, and `held_out` is
reported in aggregate.

- `fit`: logistic regression (numpy, Newton steps, a small L2 penalty) on every candidate sentence of the
  tuning questions, positive when it holds the answer span; prints the weights for `asked.WEIGHTS`.
- `ragline eval sentence-rows` (`golden_rows`): the tuning questions of a golden set through the whole
  pipeline (its evaluation index, built once by `ragline eval answers`), recording the passages the generator reads for each: candidate
  sentences positive when they hold one of the question's evidence strings or facts (facts of three words
  or more: "No" is in many sentences), written to a JSON file that `fit --golden FILE` adds to XQuAD's
  rows, each source weighing as much in all as XQuAD's rows do.
- `gate`: per half, the answer gate (pipelines/answering/answerability.py) with the lexical answer: for each
  threshold of the cross-encoder's best logit, the share still answered with every paragraph and the share
  with no answer once the answering paragraph is taken away. `--ranker` is required.
- `judge`: per half, the share of answers holding the answer span and the sentences per answer, for the
  `asked` selection and for the lexical order (`extract_answer`); and, for abstention, the same questions
  with their answering paragraph taken away (the other four paragraphs share the question's words but do
  not answer it): the share that gets no answer, for each `MIN_PROBABILITY` candidate.

    ragline eval sentence-rows --source DIR [--include GLOB] --golden FILE --ranker --out ROWS.json
    python -m evals.studies.answer_sentences fit --xquad ../shared/corpora/xquad --golden ROWS.json [--ranker]
    python -m evals.studies.answer_sentences judge --xquad ../shared/corpora/xquad --out FILE.json
    python -m evals.studies.answer_sentences gate --xquad ../shared/corpora/xquad --ranker --half tuning
    python -m evals.studies.answer_sentences table RUN.json [RUN.log] ...   (`ragline eval answers` runs)

`table` prints, per half of each `ragline eval answers` run (its per-question records split by `half_of`),
the reply kinds, facts present, evidence in the answer, quote support and citation validity, and, from the
run's log (its stderr) when given after it, the p50 / p95 of the whole reply's time over the run's
questions (`query_answered` events: the extractive generator releases its sentences together, so this is
also the time to its first validated sentence).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.golden import normalise
from pipelines.answering import answerability, asked
from pipelines.answering.extractive import extract_answer, score_sentences
from pipelines.documents import Chunk
from pipelines.golden_sets import half_of
from pipelines.text.analysis import analyzer

_MARKER = re.compile(r"\s*\[C:[^\]]+\]")
WORDS = analyzer("snowball")
RANKER = asked.FEATURES.index("ranker")  # the graph's default `answer_analyzer`


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answer: str
    passages: tuple[Chunk, ...]
    answering: int  # the paragraph holding the answer


def load(folder: Path, language: str = "en") -> dict[str, list[Question]]:
    """XQuAD questions by half, each with its article's paragraphs as passages."""
    data = json.loads((folder / f"xquad.{language}.json").read_text(encoding="utf-8"))["data"]
    halves: dict[str, list[Question]] = {"tuning": [], "held_out": []}
    for article in data:
        title = article["title"]
        passages = tuple(
            Chunk(f"{title}-{n}", title, title, [title], f"p-{n}", "", "xquad", language, n, p["context"])
            for n, p in enumerate(article["paragraphs"])
        )
        for n, paragraph in enumerate(article["paragraphs"]):
            for qa in paragraph["qas"]:
                q = Question(qa["id"], qa["question"], qa["answers"][0]["text"], passages, n)
                halves[half_of(qa["id"])].append(q)
    return halves


def without_answer(q: Question) -> tuple[Chunk, ...]:
    """The passages less the one that answers: words in common, no answer."""
    return tuple(p for n, p in enumerate(q.passages) if n != q.answering)


def rows(questions: Sequence[Question], ranker: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of every candidate sentence. The passage's rank is set to 0: XQuAD's passages are
    an article's paragraphs in order, not a ranking, so rank earns no weight from them."""
    xs: list[list[float]] = []
    ys: list[float] = []
    rank = asked.FEATURES.index("inverse_rank")
    for q in questions:
        found = asked.candidates(q.text, q.passages, words=WORDS, language="en", ranker=ranker)
        labels = [float(normalise(q.answer) in normalise(c.sentence.text)) for c in found]
        if not any(labels):
            continue  # no candidate holds the answer: nothing to learn about ranking
        xs.extend([*c.features[:rank], 0.0, *c.features[rank + 1 :]] for c in found)
        ys.extend(labels)
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 30, weight: np.ndarray | None = None) -> np.ndarray:
    """Logistic regression by Newton's method, rows weighted by `weight`; the bias (first column) is not
    penalised."""
    w = np.zeros(x.shape[1])
    r = np.ones(len(y)) if weight is None else weight
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (r * (p - y)) + penalty * w
        hessian = (x * (r * p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def golden_rows(service: Any, questions: Sequence[Any], ranker: Any = None) -> dict[str, Any]:
    """Candidate sentences of golden questions (give it the tuning half), from the passages the pipeline's
    generator reads (recorded as `asked.answer` is called), labelled by the question's evidence and facts.
    `service`: a `QueryService` over the set's index; `ranker`: the sentence ranker's scores, or None."""
    from query_graph.service import QueryFailed

    seen: list[Sequence[Chunk]] = []
    original = asked.answer

    def recording(question: str, chunks: Sequence[Chunk], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(chunks[: kwargs.get("passages", 5)]))
        return original(question, chunks, *args, **kwargs)

    asked.answer = recording
    out: dict[str, Any] = {"x": [], "y": [], "questions": 0, "features": list(asked.FEATURES)}
    try:
        for q in questions:
            if q.expected != "answer":
                continue
            seen.clear()
            try:
                service.answer(q.question, variants={"sentence_ranker": "asked"})
            except QueryFailed:
                continue
            if not seen:
                continue
            wanted = [normalise(e) for e in q.evidence] + [normalise(f) for f in q.facts if len(f.split()) >= 3]
            found = asked.candidates(q.question, seen[-1], words=WORDS, language="en", ranker=ranker)
            labels = [float(any(w in normalise(c.sentence.text) for w in wanted)) for c in found]
            if any(labels):
                out["x"].extend(list(c.features) for c in found)
                out["y"].extend(labels)
                out["questions"] += 1
    finally:
        asked.answer = original
    return out


def said(text: str) -> str:
    return normalise(_MARKER.sub("", text))


def judge(questions: Sequence[Question], thresholds: Sequence[float], ranker: Any = None) -> dict[str, Any]:
    held, count, lexical_held, lexical_count, best_p, removed_p = [], [], [], [], [], []
    best_r: list[float] = []
    removed_r: list[float] = []
    for q in questions:
        picks = asked.select(q.text, q.passages, words=WORDS, language="en", min_probability=0.0, ranker=ranker)
        text = asked.render(picks)
        held.append(float(normalise(q.answer) in said(text)))
        count.append(float(len(picks)))
        best_p.append(max((c.probability for c in picks), default=0.0))
        best_r.append(max((c.features[RANKER] for c in picks), default=-99.0))
        lex, used = extract_answer(q.text, q.passages, words=WORDS)
        lexical_held.append(float(normalise(q.answer) in said(lex)))
        lexical_count.append(float(len(used)))
        gone = asked.select(q.text, without_answer(q), words=WORDS, language="en", min_probability=0.0, ranker=ranker)
        removed_p.append(max((c.probability for c in gone), default=0.0))
        removed_r.append(max((c.features[RANKER] for c in gone), default=-99.0))
    n = len(questions)
    out: dict[str, Any] = {
        "n": n,
        "asked": {"contains_answer": round(sum(held) / n, 4), "sentences": round(sum(count) / n, 3)},
        "lexical": {"contains_answer": round(sum(lexical_held) / n, 4), "sentences": round(sum(lexical_count) / n, 3)},
        "abstention": [],
    }
    for t in thresholds:
        answered = [h for h, p in zip(held, best_p, strict=True) if p >= t]
        out["abstention"].append(
            {
                "min_probability": t,
                "answered": round(len(answered) / n, 4),
                "answered_holding_answer": round(sum(answered) / n, 4),
                "abstained_without_answer_paragraph": round(sum(p < t for p in removed_p) / n, 4),
            }
        )
    if ranker is not None:
        out["ranker_abstention"] = [
            {
                "min_ranker": t,
                "answered": round(sum(r >= t for r in best_r) / n, 4),
                "answered_holding_answer": round(sum(h for h, r in zip(held, best_r, strict=True) if r >= t) / n, 4),
                "abstained_without_answer_paragraph": round(sum(r < t for r in removed_r) / n, 4),
            }
            for t in (-10.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0)
        ]
    return out


def pool_sentences(question: str, passages: Sequence[Chunk], pool: int = 12) -> list[str]:
    """The gate's other reading, not kept: the best `pool` qualifying sentences by coverage (every sentence the
    generator sees) and the sentences right before and after each of them in its passage."""
    scored = score_sentences(question, passages, own_only=False, words=WORDS, language="en")
    qualifying = sorted((s for s in scored if s.score >= 0.15), key=lambda s: -s.score)[:pool]
    chosen = {(s.rank, s.position) for s in qualifying}
    near = {(s.rank, s.position + d) for s in qualifying for d in (-1, 1)} - chosen
    return list(dict.fromkeys([s.text for s in qualifying] + [s.text for s in scored if (s.rank, s.position) in near]))


GATE_THRESHOLDS = (-10.0, -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0)


def gate(questions: Sequence[Question], ranker: Any) -> dict[str, Any]:
    """The answer gate (pipelines/answering/answerability.py) with the lexical answer, reading either the answer's own
    sentences (`answer`, the gate's) or the qualifying sentences and their neighbours (`pool_sentences`): per threshold, the share
    of questions still answered with all their paragraphs (and answered holding the answer span), and the share
    that gets no answer once the answering paragraph is taken away."""
    best: dict[str, tuple[list[float], list[float]]] = {"answer": ([], []), "pool": ([], [])}
    held: list[float] = []
    read: dict[str, list[int]] = {"answer": [], "pool": []}
    for q in questions:
        for n, passages in enumerate((q.passages, without_answer(q))):
            text, chosen = extract_answer(q.text, passages, words=WORDS)
            if n == 0:
                held.append(float(normalise(q.answer) in said(text)))
            verdicts = {
                "answer": answerability.judged(q.text, [s.text for s in chosen], ranker),
                "pool": answerability.judged(q.text, pool_sentences(q.text, passages), ranker),
            }
            for reads, verdict in verdicts.items():
                best[reads][n].append(verdict.best_score if verdict.best_score is not None else 99.0)
                read[reads].append(verdict.read)
    n = len(questions)
    out: dict[str, Any] = {"n": n, "lexical_contains_answer": round(sum(held) / n, 4)}
    for reads, (with_p, without_p) in best.items():
        out[reads] = {
            "sentences_read_mean": round(sum(read[reads]) / max(len(read[reads]), 1), 2),
            "gate": [
                {
                    "min_logit": t,
                    "answered": round(sum(s >= t for s in with_p) / n, 4),
                    "answered_holding_answer": round(
                        sum(h for h, s in zip(held, with_p, strict=True) if s >= t) / n, 4
                    ),
                    "abstained_without_answer_paragraph": round(sum(s < t for s in without_p) / n, 4),
                }
                for t in GATE_THRESHOLDS
            ],
        }
    return out


def _avg(values: Sequence[float | None]) -> str:
    present = [v for v in values if v is not None]
    return f"{sum(present) / len(present):.3f}" if present else "-"


def reply_times(log: Path) -> list[float]:
    """The whole reply's milliseconds of every question a run's log records."""
    times = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"query_answered"' in line:
            try:
                times.append(float(json.loads(line)["timings_ms"]["total"]))
            except (ValueError, KeyError):
                continue
    return times


def table(paths: Sequence[str]) -> list[str]:
    lines = [
        "| run | half | answer -> answered | abstain + clarify right | facts present | evidence in answer "
        "| quote support | citation validity | reply p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    at = 0
    while at < len(paths):
        path = Path(paths[at])
        log = Path(paths[at + 1]) if at + 1 < len(paths) and paths[at + 1].endswith(".log") else None
        at += 2 if log else 1
        records = json.loads(path.read_text(encoding="utf-8"))["questions"]
        times = sorted(reply_times(log)) if log else []
        timing = f"{np.percentile(times, 50):.0f} / {np.percentile(times, 95):.0f}" if times else "-"
        for half in ("tuning", "held_out", "all"):
            group = [r for r in records if half in ("all", half_of(r["id"]))]
            answer = [r for r in group if r["expected"] == "answer"]
            other = [r for r in group if r["expected"] != "answer"]
            lines.append(
                f"| {path.stem} | {half} | {sum(r['kind_correct'] for r in answer)}/{len(answer)} "
                f"| {sum(r['kind_correct'] for r in other)}/{len(other)} "
                f"| {_avg([r['facts_present'] for r in answer])} | {_avg([r['evidence_in_answer'] for r in answer])} "
                f"| {_avg([r['quote_support'] for r in group])} | {_avg([r['citation_validity'] for r in group])} "
                f"| {timing if half == 'all' else ''} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.studies.answer_sentences")
    parser.add_argument("action", choices=["fit", "judge", "gate", "table"])
    parser.add_argument("runs", nargs="*", help="table: `ragline eval answers` outputs, each optionally with its log")
    parser.add_argument("--xquad")
    parser.add_argument("--golden", action="append", help="rows written by `ragline eval sentence-rows`")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--half", choices=["all", "tuning", "held_out"], default="all")
    parser.add_argument("--out")
    parser.add_argument("--ranker", action="store_true", help="with the packaged cross-encoder's scores")
    args = parser.parse_args(argv)
    if args.action == "table":
        print("\n".join(table(args.runs)))
        return 0
    halves = load(Path(args.xquad))
    if args.limit:
        halves = {h: qs[: args.limit] for h, qs in halves.items()}
    ranker = None
    if args.ranker:
        from pipelines.retrieval.rerank import CrossEncoderReranker
        from pipelines.settings import Settings

        settings = Settings()
        ranker = CrossEncoderReranker(
            settings.reranker_model, settings.reranker_path, settings.rerank_max_tokens
        ).scores
    if args.action == "fit":
        x, y = rows(halves["tuning"], ranker)
        weight, xquad_rows = np.ones(len(y)), len(y)
        print(f"xquad: {len(y)} candidate sentences, {int(y.sum())} positive")
        for path in args.golden or []:
            extra = json.loads(Path(path).read_text(encoding="utf-8"))
            gx, gy = np.array(extra["x"], dtype=float), np.array(extra["y"], dtype=float)
            print(f"{path}: {len(gy)} candidate sentences, {int(gy.sum())} positive")
            # Each source weighs as much in all as XQuAD's rows.
            x, y = np.vstack([x, gx]), np.concatenate([y, gy])
            weight = np.concatenate([weight, np.full(len(gy), xquad_rows / max(len(gy), 1))])
        w = fit(x, y, args.l2, weight=weight)
        for name, value in zip(asked.FEATURES, w, strict=True):
            print(f"    {value: .3f},  # {name}")
        return 0
    if args.action == "gate":
        if ranker is None:
            parser.error("gate needs --ranker (the gate is the cross-encoder's)")
        report = {half: gate(qs, ranker) for half, qs in halves.items() if args.half in ("all", half)}
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        return 0
    thresholds = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]
    report = {half: judge(qs, thresholds, ranker) for half, qs in halves.items() if args.half in ("all", half)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
