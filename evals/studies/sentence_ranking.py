"""The extractive answer's sentence order on XQuAD: data the golden sets never saw (`eval sentences`).

XQuAD holds 48 Wikipedia articles of five paragraphs each, and questions whose answer is a span of one
paragraph. For each question the article's five paragraphs are the passages (in the article's order,
so no ranker is helped by the answer's paragraph coming first), and the extractive generator answers
once per sentence ranker (pipelines/answering/extractive.py). Reported per ranker:
- `contains_answer`: the share of answers that hold the answer span (normalised as the golden sets'
  evidence is);
- `sentences`: the mean number of sentences an answer quotes (fewer says the same with less to read);
- `empty`: answers with no sentence (nothing covered the question; the same for every ranker, since
  coverage decides what qualifies);
and for each ranker against `lexical`, the paired bootstrap 95% interval of the difference and the exact
sign test. The project keeps none of XQuAD's text.

With `--pairs`, two questions of one paragraph become one question of two asks ("What is X, and who did
Y?", when the second starts with a wh-word), and an answer counts only when it holds both answer spans.
The extractive answer's rule for such questions (the best sentence of each ask first) is compared with
scoring the question as one (`lexical_one_ask`).

`--analyzers snowball` adds `lexical_snowball`: the lexical order with each word stemmed in the
passages' language and CJK text read as character bigrams (the `answer_analyzer` variant, the graph's
default since the tenth session). Every other answerer here reads plain words, as before, so its figures
stay comparable with earlier runs.

    ragline eval sentences --xquad ../shared/corpora/xquad --language en --out sentences.xquad_en.json
    ragline eval sentences --xquad ../shared/corpora/xquad --language en --pairs --out sentences.xquad_en_pairs.json
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from evals.golden import normalise
from evals.stats import mean, paired_bootstrap_ci, sign_test
from pipelines.answering.extractive import SentenceRanker, extract_answer
from pipelines.documents import Chunk
from pipelines.text.analysis import analyzer

log = structlog.get_logger(__name__)
_MARKER = re.compile(r"\s*\[C:[^\]]+\]")  # citation markers sit before a sentence's full stop


@dataclass(frozen=True)
class Question:
    text: str
    answers: tuple[str, ...]  # every one must be in the answer (two for a paired question)
    passages: tuple[Chunk, ...]


# Answers a question from its passages: (the cited answer, the sentences it used).
Answerer = Callable[[str, Sequence[Chunk]], tuple[str, Sequence[object]]]
_WH_START = re.compile(r"^(?:what|which|how|where|when|who|whose|why)\b", re.IGNORECASE)


def load_questions(folder: Path, language: str, limit: int | None = None, pairs: bool = False) -> list[Question]:
    """Every question of `xquad.<language>.json` with its article's paragraphs as passages; `pairs`:
    each paragraph's questions two by two as one question of two asks (`paired`)."""
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
            qas = paragraph["qas"]
            if pairs:
                for a, b in zip(qas[0::2], qas[1::2], strict=False):
                    text = paired(a["question"], b["question"])
                    if text is not None:
                        answers = (a["answers"][0]["text"], b["answers"][0]["text"])
                        questions.append(Question(text, answers, passages))
                continue
            for qa in qas:
                questions.append(Question(qa["question"], (qa["answers"][0]["text"],), passages))
    return questions[:limit] if limit else questions


def paired(first: str, second: str) -> str | None:
    """ "What is X?" and "Who did Y?" as "What is X, and who did Y?"; None when the second does not start
    with a wh-word (English) or the first holds a question mark inside."""
    first, second = first.strip().removesuffix("?").strip(), second.strip()
    if "?" in first or not _WH_START.match(second):
        return None
    joined = f"{first}, and {second[0].lower()}{second[1:]}"
    return joined if joined.endswith("?") else joined + "?"


def answerers(
    rankers: Mapping[str, SentenceRanker | None], one_ask: bool = False, analyzers: Sequence[str] = ()
) -> dict[str, Answerer]:
    """One extractive answerer per sentence ranker; `one_ask`: also `lexical_one_ask`, the lexical order
    with a question of two asks scored as one; each of `analyzers` (besides `plain`): `lexical_<name>`, the
    lexical order with sentences and question read by that analyzer (the `answer_analyzer` variant)."""
    out: dict[str, Answerer] = {
        name: (lambda q, p, r=ranker: extract_answer(q, p, ranker=r))  # type: ignore[misc]
        for name, ranker in rankers.items()
    }
    if one_ask:
        out["lexical_one_ask"] = lambda q, p: extract_answer(q, p, each_ask=False)
    for name in analyzers:
        if name != "plain":
            words = analyzer(name)
            out[f"lexical_{name}"] = lambda q, p, w=words: extract_answer(q, p, words=w)  # type: ignore[misc]
    return out


def outcomes(questions: Sequence[Question], answer: Answerer) -> dict[str, list[float]]:
    contains, sentences, empty = [], [], []
    for number, q in enumerate(questions, start=1):
        text, used = answer(q.text, q.passages)
        said = normalise(_MARKER.sub("", text))
        contains.append(float(all(normalise(a) in said for a in q.answers)))
        sentences.append(float(len(used)))
        empty.append(float(not used))
        if number % 200 == 0:
            log.info("eval_sentences_progress", done=number, of=len(questions))
    return {"contains_answer": contains, "sentences": sentences, "empty": empty}


def evaluate_sentence_rankers(questions: Sequence[Question], rankers: Mapping[str, Answerer]) -> dict[str, Any]:
    runs = {name: outcomes(questions, answer) for name, answer in rankers.items()}
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
