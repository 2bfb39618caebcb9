"""The answer gate (pipelines/answering/answerability.py) with the packaged cross-encoder: an answer whose
sentences only share the question's words is not said; one that answers is."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipelines.answering.answerability import MIN_LOGIT, judged
from pipelines.answering.extractive import extract_answer
from pipelines.documents import Chunk
from pipelines.retrieval.rerank import CrossEncoderReranker

PAGE = (
    "The dashboard listens on port 7420 by default. Set HARBOR_PORT to choose another port. "
    "Harbor keeps build logs for 14 days."
)
CHUNK = Chunk("config-1", "guide/config.md", "Configuration", ["Configuration"], "ports", "", "heading", "en", 1, PAGE)


@pytest.fixture(scope="module")
def reranker() -> CrossEncoderReranker:
    return CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8")


def test_an_answer_that_answers_passes(reranker: CrossEncoderReranker) -> None:
    question = "Which port does the dashboard listen on?"
    _, used = extract_answer(question, [CHUNK])
    verdict = judged(question, [s.text for s in used], reranker.scores)
    assert verdict.answers and verdict.best_score is not None and verdict.best_score >= MIN_LOGIT
    assert verdict.best_sentence is not None and "7420" in verdict.best_sentence
    assert verdict.read == len(used)


def test_an_answer_that_only_shares_the_questions_words_is_stopped(reranker: CrossEncoderReranker) -> None:
    question = "How much memory does the dashboard need?"
    text, used = extract_answer(question, [CHUNK])
    assert "dashboard" in text  # word overlap alone would say it
    verdict = judged(question, [s.text for s in used], reranker.scores)
    assert not verdict.answers and verdict.best_score is not None and verdict.best_score < MIN_LOGIT
    assert verdict.as_reply() == {"answers": False, "best_score": verdict.best_score, "sentences_read": len(used)}


def test_the_best_sentence_decides_and_each_text_is_read_once() -> None:
    seen: list[list[str]] = []

    def ranker(question: str, sentences: Sequence[str]) -> list[float]:
        seen.append(list(sentences))
        return [MIN_LOGIT if "7420" in s else MIN_LOGIT - 3 for s in sentences]

    verdict = judged("q", ["weak", "port 7420", "weak"], ranker)
    assert verdict.answers and verdict.best_sentence == "port 7420" and seen == [["weak", "port 7420"]]
    assert not judged("q", ["weak"], ranker).answers
    empty = judged("q", [], ranker)
    assert empty.answers and empty.best_score is None and len(seen) == 2  # nothing to read: the model is not asked
