"""The extractive answer's sentence order on XQuAD: data the golden sets never saw (`eval sentences`).

XQuAD holds 48 Wikipedia articles of five paragraphs each, and questions whose answer is a span of one
paragraph. For each question the article's five paragraphs are the passages (in the article's order,
so no ranker is helped by the answer's paragraph coming first), and the extractive generator answers
once per sentence ranker (pipelines/extractive.py). Reported per ranker:
- `contains_answer`: the share of answers that hold the answer span (normalised as the golden sets'
  evidence is);
- `sentences`: the mean number of sentences an answer quotes (fewer says the same with less to read);
- `empty`: answers with no sentence (nothing covered the question; the same for every ranker, since
  coverage decides what qualifies);
and for each ranker against `lexical`, the paired bootstrap 95% interval of the difference and the exact
sign test. The project keeps none of XQuAD's text.

    ragline eval sentences --xquad ../shared/corpora/xquad --language en --out evals/results/sentences.xquad_en.json
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from evals.golden import normalise
from evals.stats import mean, paired_bootstrap_ci, sign_test
from pipelines.documents import Chunk
from pipelines.extractive import SentenceRanker, extract_answer

log = structlog.get_logger(__name__)
_MARKER = re.compile(r"\s*\[C:[^\]]+\]")  # citation markers sit before a sentence's full stop


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    passages: tuple[Chunk, ...]


def load_questions(folder: Path, language: str, limit: int | None = None) -> list[Question]:
    """Every question of `xquad.<language>.json` with its article's paragraphs as passages."""
    path = folder / f"xquad.{language}.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist")
    questions: list[Question] = []
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        title = article["title"]
        passages = tuple(
            Chunk(f"{title}-{n}", title, title, [title], f"p-{n}", "", "xquad", language, n, p["context"])
            for n, p in enumerate(article["paragraphs"])
        )
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append(Question(qa["question"], qa["answers"][0]["text"], passages))
    return questions[:limit] if limit else questions


def outcomes(questions: Sequence[Question], ranker: SentenceRanker | None) -> dict[str, list[float]]:
    contains, sentences, empty = [], [], []
    for number, q in enumerate(questions, start=1):
        text, used = extract_answer(q.text, q.passages, ranker=ranker)
        contains.append(float(normalise(q.answer) in normalise(_MARKER.sub("", text))))
        sentences.append(float(len(used)))
        empty.append(float(not used))
        if number % 200 == 0:
            log.info("eval_sentences_progress", done=number, of=len(questions))
    return {"contains_answer": contains, "sentences": sentences, "empty": empty}


def evaluate_sentence_rankers(
    questions: Sequence[Question], rankers: Mapping[str, SentenceRanker | None]
) -> dict[str, Any]:
    runs = {name: outcomes(questions, ranker) for name, ranker in rankers.items()}
    report: dict[str, Any] = {
        "n": len(questions),
        "rankers": {name: {metric: round(mean(v), 4) for metric, v in run.items()} for name, run in runs.items()},
        "comparisons": [],
    }
    base = runs["lexical"]
    for name, run in runs.items():
        if name == "lexical":
            continue
        for metric in ("contains_answer", "sentences"):
            a, b = base[metric], run[metric]
            low, high = paired_bootstrap_ci(a, b)
            report["comparisons"].append(
                {
                    "metric": metric,
                    "a": "lexical",
                    "b": name,
                    "diff": round(mean(b) - mean(a), 4),
                    "ci95": [round(low, 4), round(high, 4)],
                    "p_value": round(sign_test(a, b), 6),
                }
            )
    return report
