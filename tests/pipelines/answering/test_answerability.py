"""The answer gate (pipelines/answering/answerability.py) with the packaged cross-encoder: an answer whose
sentences only share the question's words is not said; one that answers is."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipelines.answering.answerability import MIN_LOGIT, judged, value_asked, value_held
from pipelines.answering.extractive import ScoredSentence, extract_answer
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


SETTINGS_PAGE = (
    "The dashboard listens on port 7420 by default. Set HARBOR_PORT to choose another port. "
    "The worker pool size is set with HARBOR_WORKERS. Workers are restarted after a crash.\n\n"
    "The retention is set with:\n\n```\nHARBOR_RETENTION=14\n```"
)
SETTINGS = Chunk(
    "config-2", "guide/config.md", "Configuration", ["Configuration"], "workers", "", "heading", "en", 1, SETTINGS_PAGE
)


def test_only_a_question_that_asks_a_value_alone_is_checked_for_one() -> None:
    assert value_asked("Which port does the dashboard use by default?") == {"port"}
    assert value_asked("How many workers does the pool start by default?") == {"default", "number"}
    assert value_asked("How do I change the port?") == frozenset()  # asks how, too
    assert value_asked("What is a worker?") == frozenset()


def quoted(*texts: str) -> list[ScoredSentence]:
    return [ScoredSentence(t, SETTINGS.chunk_id, 1, n, 1.0) for n, t in enumerate(texts)]


def test_an_answer_naming_the_setting_without_its_value_is_declined() -> None:
    question = "How many workers does the pool start by default?"
    verdict = value_held(question, quoted("The worker pool size is set with HARBOR_WORKERS."), [SETTINGS])
    assert not verdict.answers and verdict.missing_value == ("default", "number")
    assert verdict.as_reply()["missing_value"] == ["default", "number"]
    # A question that also asks how is never declined by it.
    how = "How many workers does the pool start by default, and how do I change it?"
    assert value_held(how, quoted("The worker pool size is set with HARBOR_WORKERS."), [SETTINGS]).answers


def test_an_answer_holding_the_value_or_a_block_with_it_passes() -> None:
    question = "Which port does the dashboard listen on?"
    assert value_held(question, quoted("The dashboard listens on port 7420 by default."), [SETTINGS]).answers
    # A port the question names already is not the value asked for.
    named = "Does the dashboard listen on port 7420?"
    assert value_asked(named) == frozenset()  # a yes/no question: not a value alone
    assert not value_held(
        "Which port besides 7420 does it use?", quoted("It listens on port 7420."), [SETTINGS]
    ).answers
    # The value is in the block the quoted sentence introduces, not in the sentence.
    question = "How many days is the retention?"
    assert value_held(question, quoted("The retention is set with:"), [SETTINGS]).answers
    assert not value_held(question, quoted("Workers are restarted after a crash."), [SETTINGS]).answers
