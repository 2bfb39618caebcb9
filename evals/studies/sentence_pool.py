"""Which candidate sentence of the extractive answer holds the evidence: a study of the ranker's pool.

The extractive answer quotes the best few of a pool of candidate sentences (pipelines/answering/extractive.py
`ranked`: the best `RANKED_POOL` by coverage, ordered by the sentence ranker). On questions written before
ragline ran, the commonest wrong answer had its evidence sentence in that pool and quoted another one. This
study records each pool as the default pipeline builds it, with what each ranker reads of every candidate, and
labels a candidate by the question's golden evidence (the candidate holds an evidence string, or a long
candidate is held by one). Offline, it then compares orders of the same pools by the share of questions whose
first, or first three, candidates hold the evidence, and fits a logistic scorer on some corpora to test it on
others (corpora, never questions, are split, so a fitted weight never sees the pages it is tested on).

    ragline eval sentence-pools --source evals/corpora/trio/docs \
        --golden evals/golden/trio.jsonl --out pools.trio.jsonl
    python -m evals.studies.sentence_pool compare --train pools.a.jsonl pools.b.jsonl --test pools.c.jsonl
    python -m evals.studies.sentence_pool choose pools.a.jsonl    # with `make llm-serve` running
    python -m evals.studies.sentence_pool nearest pools.a.jsonl pools.b.jsonl   # the pool widened by cosine

`ragline eval sentence-pools` builds (or reuses) the set's index under `RAGLINE_HOME` and calls `record`.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.golden import normalise
from evals.studies.answer_sentences import fit
from pipelines.adapters.llm_harness import response_format
from pipelines.answering import extractive
from pipelines.answering.extractive import ScoredSentence, SentenceRanker, z_scores
from pipelines.answering.litellm_generator import build_choose_messages, choose_schema
from pipelines.answering.passage_units import block_readings
from pipelines.documents import Chunk
from pipelines.text.analysis import Analyzer

# Words that say the question asks for a value a sentence states as a number, a name or a block.
_ASKS_VALUE = re.compile(
    r"\b(?:default|how (?:many|much|long|often)|which (?:version|port|value|option|flag|setting)|what (?:version|port|value)|"
    r"limit|maximum|minimum|timeout|size|number)\b",
    re.IGNORECASE,
)
_ASKS_HOW = re.compile(r"\b(?:how (?:do|can|should|to)|what command|which command)\b", re.IGNORECASE)
_ASKS_YES_NO = re.compile(r"^\s*(?:can|does|do|is|are|will|should|must|may)\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"`|\(\)|=|--|\b\w+\.\w+\(|\b[a-z]+_[a-z_]+\b")
_NEGATION = re.compile(r"\b(?:not|no|never|cannot|can't|don't|doesn't|isn't|won't|only)\b", re.IGNORECASE)
OUTSIDE = -1e8  # a scorer's score below this: the candidate is not one it orders (outside the pool)
MIN_HELD = 25  # a candidate this long (normalised characters) that an evidence string holds is labelled evidence

FEATURES = (
    "bias",
    "in_pool",  # among the default's candidates (the best 12 by coverage of at least 0.15)
    "cross_encoder",  # z over the pool
    "cosine",  # question against "heading: sentence", z over the pool
    "coverage",  # the share of the question's terms the sentence holds (raw)
    "coverage_z",
    "inverse_rank",  # 1 / the rank of its passage
    "first_in_chunk",
    "log_words",
    "value_asked_and_digit",
    "how_asked_and_code",
    "yes_no_and_negation",
    "heading_overlap",  # share of the question's terms in its heading path
    "introduces_block",  # ends with ":"
)


def labelled(text: str, evidence: Sequence[str]) -> bool:
    said = normalise(text)
    for e in evidence:
        wanted = normalise(e)
        if wanted and (wanted in said or (len(said) >= MIN_HELD and said in wanted)):
            return True
    return False


def record(service: Any, questions: Sequence[Any]) -> list[dict[str, Any]]:
    """Each answerable question's pool as the default pipeline builds it, with every candidate's readings.
    `service`: a `QueryService` over the set's index. The pool is seen by wrapping the extractive module's
    `ranked` and `score_sentences` for the duration (a study, never the served path)."""
    from query_graph.nodes import generation
    from query_graph.service import QueryFailed

    seen: dict[str, Any] = {}
    original_ranked, original_score = extractive.ranked, extractive.score_sentences
    original_passage_scores = generation.unit_passage_scores

    def recording_passage_scores(scored_chunks: Sequence[tuple[Chunk, float]]) -> dict[str, float]:
        found = original_passage_scores(scored_chunks)
        seen["passage_scores"] = found
        return found

    def recording_score(
        question: str,
        chunks: Sequence[Chunk],
        own_only: bool = False,
        words: Analyzer = extractive.PLAIN,
        language: str | None = None,
        readings: Mapping[str, str] | None = None,
    ) -> list[ScoredSentence]:
        found = original_score(question, chunks, own_only, words, language, readings)
        seen["last"] = (list(chunks), found)
        return found

    def recording_ranked(
        question: str,
        scored: list[ScoredSentence],
        ranker: SentenceRanker,
        count: int,
        size: int = extractive.RANKED_POOL,
        readings: Mapping[str, str] | None = None,
        margin: float = extractive.RANKED_MARGIN,
        extra: Sequence[ScoredSentence] = (),
    ) -> list[ScoredSentence]:
        pool = sorted(scored, key=lambda s: -s.score)[:size]
        if pool and "pool" not in seen:
            seen["pool"] = pool
            seen["default"] = list(ranker(question, [(readings or {}).get(s.text, s.text) for s in pool]))
            seen["chunks"], seen["every"] = seen.get("last", ([], []))
        return original_ranked(question, scored, ranker, count, size, readings, margin, extra)

    reranker = service.back.reranker()
    rows: list[dict[str, Any]] = []
    extractive.ranked, extractive.score_sentences = recording_ranked, recording_score
    generation.unit_passage_scores = recording_passage_scores
    try:
        for n, q in enumerate(questions, 1):
            if q.expected != "answer" or not q.evidence:
                continue
            seen.clear()
            try:
                reply = service.answer(q.question)
            except QueryFailed as exc:
                print(f"  {q.id}: failed {exc.code}", file=sys.stderr)
                continue
            row: dict[str, Any] = {
                "id": q.id,
                "type": q.type,
                "question": q.question,
                "answer": reply.get("answer", ""),
            }
            if not seen.get("pool"):
                rows.append({**row, "pool": []})
                continue
            chunks = {c.chunk_id: c for c in seen["chunks"]}
            default = {s.text: d for s, d in zip(seen["pool"], seen["default"], strict=True)}
            every = extractive.once([s for s in seen["every"] if s.own])
            # Each sentence as the default ranker reads it: with the block it introduces (`answer_blocks=read`).
            readings = {u: r for c in chunks.values() for u, r in block_readings(c.generation_text).items()}
            texts = [readings.get(s.text, s.text) for s in every]
            headings = [" > ".join(chunks[s.chunk_id].heading_path) for s in every]
            shown = [f"{h}: {t}" if h else t for h, t in zip(headings, texts, strict=True)]
            cosine = service.embedder.embed_passages(shown) @ service.embedder.embed_query(q.question)
            cross = list(reranker.scores(q.question, texts))
            row["pool"] = [
                {
                    "text": s.text,
                    "read_with_block": s.text in readings,
                    "reading": readings.get(s.text),  # with its block, as the ranker reads it (None: the text)
                    "chunk": s.chunk_id,
                    "heading": h,
                    "page": chunks[s.chunk_id].document_id,
                    "rank": s.rank,
                    "position": s.position,
                    "coverage": s.score,
                    "in_pool": s.text in default,
                    "default": float(default.get(s.text, -1e9)),
                    "cross_encoder": float(c),
                    "cosine": float(v),
                    # the retrieval score of its best passage, as the default ranker's third reading (None: not read)
                    "passage_score": seen.get("passage_scores", {}).get(readings.get(s.text, s.text)),
                    "evidence": labelled(s.text, q.evidence),
                }
                for s, h, c, v in zip(every, headings, cross, cosine, strict=True)
            ]
            row["evidence_in_passages"] = any(
                any(normalise(e) in normalise(c.text) for e in q.evidence) for c in chunks.values()
            )
            rows.append(row)
            print(f"  {n}/{len(questions)} {q.id}", file=sys.stderr, flush=True)
    finally:
        extractive.ranked, extractive.score_sentences = original_ranked, original_score
        generation.unit_passage_scores = original_passage_scores
    return rows


def _terms(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 2}


def features(row: dict[str, Any]) -> np.ndarray:
    """One row of `FEATURES` per candidate of the pool."""
    pool = row["pool"]
    question = row["question"]
    asked_terms = _terms(question)
    value, how, yes_no = (bool(p.search(question)) for p in (_ASKS_VALUE, _ASKS_HOW, _ASKS_YES_NO))
    cross, cosine = (z_scores([c[k] for c in pool]) for k in ("cross_encoder", "cosine"))
    coverage_z = z_scores([c["coverage"] for c in pool])
    out = []
    for i, c in enumerate(pool):
        text = c["text"]
        heading_terms = _terms(c["heading"])
        out.append(
            [
                1.0,
                float(c.get("in_pool", True)),
                cross[i],
                cosine[i],
                c["coverage"],
                coverage_z[i],
                1.0 / c["rank"],
                float(c["position"] == 0),
                math.log(1 + len(text.split())),
                float(value and bool(_DIGIT.search(text))),
                float(how and bool(_CODE.search(text))),
                float(yes_no and bool(_NEGATION.search(text))),
                len(asked_terms & heading_terms) / (len(asked_terms) or 1),
                float(text.rstrip().endswith(":")),
            ]
        )
    return np.asarray(out, dtype=float)


def load(paths: Sequence[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        corpus = Path(path).name.split(".")[1] if Path(path).name.count(".") >= 2 else Path(path).stem
        rows.extend({**json.loads(line), "corpus": corpus} for line in Path(path).read_text().splitlines() if line)
    return rows


Scorer = Callable[[dict[str, Any]], Sequence[float]]


def hits(rows: Sequence[dict[str, Any]], scorer: Scorer, top: int) -> tuple[int, int]:
    """Questions whose best `top` candidates by `scorer` hold the evidence, of those whose pool holds it."""
    found = total = 0
    for row in rows:
        labels = [c["evidence"] for c in row["pool"]]
        if not any(labels):
            continue
        total += 1
        scores = list(scorer(row))
        order = sorted(range(len(labels)), key=lambda i: -scores[i])[:top]
        found += any(labels[i] for i in order if scores[i] > OUTSIDE)
    return found, total


def fitted(rows: Sequence[dict[str, Any]], l2: float = 1.0) -> np.ndarray:
    xs = [features(r) for r in rows if any(c["evidence"] for c in r["pool"])]
    ys = [[float(c["evidence"]) for c in r["pool"]] for r in rows if any(c["evidence"] for c in r["pool"])]
    return fit(np.vstack(xs), np.concatenate([np.asarray(y) for y in ys]), l2=l2)


def compare(train: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]]) -> dict[str, Any]:
    weights = fitted(train)
    scorers: dict[str, Scorer] = {
        "coverage": lambda r: [c["coverage"] for c in r["pool"]],
        "default": lambda r: [c["default"] for c in r["pool"]],
        "cross_encoder": lambda r: [c["cross_encoder"] for c in r["pool"]],
        "cosine": lambda r: [c["cosine"] for c in r["pool"]],
        "learned": lambda r: list(features(r) @ weights),
        "learned_in_pool": lambda r: [
            float(v) if c["in_pool"] else -1e9 for v, c in zip(features(r) @ weights, r["pool"], strict=True)
        ],
    }
    report: dict[str, Any] = {"weights": dict(zip(FEATURES, [round(float(w), 3) for w in weights], strict=True))}
    for name, rows in (("train", train), ("test", test)):
        with_pool = [r for r in rows if r["pool"]]
        report[name] = {
            "questions": len(rows),
            "evidence_in_passages": sum(bool(r.get("evidence_in_passages")) for r in rows),
            "evidence_in_pool": sum(any(c["evidence"] for c in r["pool"]) for r in with_pool),
            **{
                f"{s}@{k}": "{}/{}".format(*hits(with_pool, scorer, k)) for s, scorer in scorers.items() for k in (1, 3)
            },
        }
    by_corpus: dict[str, Any] = {}
    for corpus in sorted({r["corpus"] for r in test}):
        rows = [r for r in test if r["corpus"] == corpus and r["pool"]]
        by_corpus[corpus] = {
            f"{s}@{k}": "{}/{}".format(*hits(rows, scorers[s], k)) for s in ("default", "learned") for k in (1, 3)
        }
    report["test_by_corpus"] = by_corpus
    return report


def _previous(pool: Sequence[dict[str, Any]]) -> list[str | None]:
    """Each candidate's preceding own sentence in its passage (None: it opens the passage's own text)."""
    by_place = {(c["chunk"], c["position"]): c["text"] for c in pool}
    return [by_place.get((c["chunk"], c["position"] - 1)) for c in pool]


def cross_readings(rows: Sequence[dict[str, Any]], scores: Callable[[str, list[str]], Sequence[float]]) -> None:
    """Adds to each candidate the cross-encoder's reading of it under its heading ("heading: text") and after the
    sentence before it ("previous text"), as the ranker's other possible inputs (`replay`)."""
    for n, row in enumerate(rows, 1):
        pool = row["pool"]
        if not pool:
            continue
        texts = [c.get("reading") or c["text"] for c in pool]
        headed = [f"{c['heading']}: {t}" if c["heading"] else t for c, t in zip(pool, texts, strict=True)]
        after = [f"{p} {t}" if p else t for p, t in zip(_previous(pool), texts, strict=True)]
        for c, h, w in zip(pool, scores(row["question"], headed), scores(row["question"], after), strict=True):
            c["cross_encoder_heading"], c["cross_encoder_window"] = float(h), float(w)
        print(f"  {n}/{len(rows)} {row['id']}", file=sys.stderr, flush=True)


def _summed(
    row: dict[str, Any],
    readings: Sequence[str],
    boost: Callable[[dict[str, Any]], float] | None = None,
    pool: Sequence[dict[str, Any]] | None = None,
) -> list[float]:
    """The default ranker's order rebuilt from `readings`, each a z-score over `pool` (default: the pool of 12);
    outside it, -1e9."""
    chosen: list[dict[str, Any]] = [c for c in row["pool"] if c["in_pool"]] if pool is None else list(pool)
    if not chosen:
        return [-1e9 for _ in row["pool"]]
    summed = np.zeros(len(chosen))
    for key in readings:
        values: list[Any] = [c.get(key) for c in chosen]
        if key == "passage_score":
            known = [v for v in values if v is not None]
            values = [v if v is not None else (min(known) if known else 0.0) for v in values]
        summed += np.asarray(z_scores([float(v) for v in values]))
    if boost is not None:
        summed += np.asarray([boost(c) for c in chosen])
    by_text = {c["text"]: float(v) for c, v in zip(chosen, summed, strict=True)}
    return [by_text.get(c["text"], -1e9) for c in row["pool"]]


def replay(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The default ranker's three readings against variants that change one of them, on the same pools."""
    base = ("cross_encoder", "cosine", "passage_score")

    def value_boost(row: dict[str, Any]) -> Callable[[dict[str, Any]], float]:
        asked = bool(_ASKS_VALUE.search(row["question"]))
        return lambda c: float(asked and bool(_DIGIT.search(c["text"]) or "default" in c["text"].lower()))

    scorers: dict[str, Scorer] = {
        "recorded": lambda r: [c["default"] for c in r["pool"]],
        "replayed": lambda r: _summed(r, base),
        "heading": lambda r: _summed(r, ("cross_encoder_heading", "cosine", "passage_score")),
        "heading_added": lambda r: _summed(r, (*base, "cross_encoder_heading")),
        "window": lambda r: _summed(r, ("cross_encoder_window", "cosine", "passage_score")),
        "window_added": lambda r: _summed(r, (*base, "cross_encoder_window")),
        "value_boost": lambda r: _summed(r, base, value_boost(r)),
        "vectors_rank": lambda r: _summed(r, ("cosine", "passage_score")),  # no cross-encoder
    }
    report: dict[str, Any] = {}
    for corpus in [*sorted({r["corpus"] for r in rows}), "all"]:
        chosen = [r for r in rows if r["pool"] and corpus in ("all", r["corpus"])]
        report[corpus] = {
            f"{name}@{k}": "{}/{}".format(*hits(chosen, scorer, k)) for name, scorer in scorers.items() for k in (1, 3)
        }
    return report


def _widened_order(row: dict[str, Any], nearest: int) -> list[float]:
    """The default ranker's order over the pool of 12 widened by the `nearest` candidates outside it whose
    "heading: sentence" the embedding model puts closest to the question (`answer_pool=nearest`); every reading is
    a z-score over the widened pool. Outside it, -1e9; no pool of 12 (nothing covers the question), no widening."""
    pool = [c for c in row["pool"] if c["in_pool"]]
    if not pool:
        return [-1e9 for _ in row["pool"]]
    outside = sorted((c for c in row["pool"] if not c["in_pool"]), key=lambda c: -c["cosine"])[:nearest]
    return _summed(row, ("cross_encoder", "cosine", "passage_score"), pool=[*pool, *outside])


def nearest(rows: Sequence[dict[str, Any]], widths: Sequence[int] = (0, 2, 4, 6)) -> dict[str, Any]:
    """How often the evidence sentence is in the ranker's pool, and among its first one and three, when the pool of
    12 (by coverage) is widened by the `width` sentences of the passages the embedding model puts nearest the
    question: the study behind `answer_pool=nearest` (pipelines/answering/extractive.py)."""
    report: dict[str, Any] = {}
    for corpus in [*sorted({r["corpus"] for r in rows}), "all"]:
        chosen = [r for r in rows if r["pool"] and corpus in ("all", r["corpus"])]
        line: dict[str, str] = {}
        for width in widths:

            def scorer(r: dict[str, Any], width: int = width) -> list[float]:
                return _widened_order(r, width)

            line[f"{width}:pool"] = "{}/{}".format(*hits(chosen, scorer, 10**6))
            for k in (1, 3):
                line[f"{width}@{k}"] = "{}/{}".format(*hits(chosen, scorer, k))
        report[corpus] = line
    return report


def model_choices(rows: Sequence[dict[str, Any]], api_base: str, model: str, count: int = 6) -> dict[str, Any]:
    """`llm_answer=choose` replayed on recorded pools: for each question whose evidence is among the default
    ranker's best `count`, the model (an OpenAI-compatible server) is asked which of them answers, with the
    generator's own prompt and schema; reported against the ranker's first."""
    asked: list[dict[str, Any]] = []
    for row in rows:
        best = sorted([c for c in row["pool"] if c["in_pool"]], key=lambda c: -c["default"])[:count]
        if not any(c["evidence"] for c in best):
            continue
        texts = [c.get("reading") or c["text"] for c in best]
        body = {
            "model": model,
            "messages": build_choose_messages(row["question"], texts),
            "temperature": 0,
            "max_tokens": 12,
            "response_format": response_format(choose_schema(len(texts)), "json_object"),
        }
        started = time.perf_counter()
        request = urllib.request.Request(
            api_base.rstrip("/") + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            reply = json.loads(response.read())["choices"][0]["message"]["content"]
        found = re.search(r"\d+", reply)
        pick = int(found.group(0)) if found else None
        hit = pick is not None and 1 <= pick <= len(best) and best[pick - 1]["evidence"]
        seconds = time.perf_counter() - started
        asked.append(
            {"id": row["id"], "corpus": row["corpus"], "pick": pick, "hit": bool(hit), "seconds": seconds}
            | {"ranker_hit": bool(best[0]["evidence"])}
        )
        print(f"  {row['id']} {pick} {bool(hit)}", file=sys.stderr, flush=True)
    times = sorted(a["seconds"] for a in asked)
    return {
        "questions": len(asked),
        "ranker_first": sum(a["ranker_hit"] for a in asked),
        "model_choice": sum(a["hit"] for a in asked),
        "model_from_fourth_on": sum(a["hit"] and (a["pick"] or 0) > 3 for a in asked),
        "p50_seconds": round(times[len(times) // 2], 2) if times else None,
        "by_corpus": {
            c: {k: sum(a[k] for a in asked if a["corpus"] == c) for k in ("ranker_hit", "hit")}
            for c in sorted({a["corpus"] for a in asked})
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`compare`, `replay` (the pools are recorded by `ragline eval sentence-pools`, which opens the set's index;
    `replay` loads the packaged cross-encoder to read each candidate under its heading and after its previous
    sentence)."""
    parser = argparse.ArgumentParser(prog="python -m evals.studies.sentence_pool")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare")
    cmp.add_argument("--train", nargs="+", required=True)
    cmp.add_argument("--test", nargs="+", required=True)
    rep = sub.add_parser("replay")
    rep.add_argument("pools", nargs="+")
    near = sub.add_parser("nearest")
    near.add_argument("pools", nargs="+")
    near.add_argument("--widths", type=int, nargs="+", default=[0, 2, 4, 6])
    cho = sub.add_parser("choose")
    cho.add_argument("pools", nargs="+")
    cho.add_argument("--api-base", default="http://127.0.0.1:8080/v1")
    cho.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args(argv)
    if args.command == "compare":
        print(json.dumps(compare(load(args.train), load(args.test)), indent=1))
        return 0
    if args.command == "nearest":
        print(json.dumps(nearest(load(args.pools), args.widths), indent=1))
        return 0
    if args.command == "choose":
        print(json.dumps(model_choices(load(args.pools), args.api_base, args.model), indent=1))
        return 0
    from pipelines.retrieval.rerank import CrossEncoderReranker
    from pipelines.settings import Settings

    settings = Settings()
    reranker = CrossEncoderReranker(settings.reranker_model, settings.reranker_path, settings.rerank_max_tokens)
    rows = load(args.pools)
    cross_readings(rows, reranker.scores)
    print(json.dumps(replay(rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
