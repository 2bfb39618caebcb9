"""The extractive answer's sentence ranker: coverage of the question's words (`lexical`) or the
packaged cross-encoder (`cross_encoder`), on real chunks and the real model."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipelines.answering.extractive import RANKED_MARGIN, extract_answer
from pipelines.documents import Chunk
from pipelines.retrieval.rerank import CrossEncoderReranker
from pipelines.text.language import LanguageGuess
from query_graph.nodes.generation import answer_sentence_ranker__cross_encoder
from tests.query_graph.harbor import Harbor

QUESTION = "Which port does the harbor dashboard listen on?"
# The first sentence repeats the question's words and answers nothing; the second answers with few of them.
DECOY = "The harbor dashboard page shows which port each harbor service uses and how to open the dashboard."
ANSWER = "Out of the box it listens on 7420, and the HARBOR_PORT variable moves it elsewhere."
CHUNK = Chunk(
    "guide-1", "guide/config.md", "Configuration", ["Configuration", "Dashboard"], "dashboard", "", "heading", "en", 1,
    f"{DECOY} {ANSWER}",
)  # fmt: skip


@pytest.fixture(scope="module")
def reranker() -> CrossEncoderReranker:
    return CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8")


def test_the_cross_encoder_quotes_the_sentence_that_answers_not_the_one_repeating_the_question(
    reranker: CrossEncoderReranker,
) -> None:
    lexical, _ = extract_answer(QUESTION, [CHUNK], max_sentences=1)
    ranked, used = extract_answer(QUESTION, [CHUNK], max_sentences=1, ranker=reranker.scores)
    assert lexical.startswith(DECOY[:-1]) and "7420" not in lexical
    assert "7420" in ranked and [s.text for s in used] == [ANSWER]


def test_sentences_far_below_the_rankers_best_are_left_out_and_the_rest_keep_page_order() -> None:
    def ranker(question: str, sentences: Sequence[str]) -> list[float]:
        return [10.0 if "7420" in s else 10.0 - RANKED_MARGIN - 0.1 for s in sentences]

    _, used = extract_answer(QUESTION, [CHUNK], ranker=ranker)
    assert [s.text for s in used] == [ANSWER]

    def close(question: str, sentences: Sequence[str]) -> list[float]:
        return [10.0 if "7420" in s else 9.0 for s in sentences]

    text, used = extract_answer(QUESTION, [CHUNK], ranker=close)
    assert [s.text for s in used] == [DECOY, ANSWER]  # both kept, in the page's order
    assert text.index("harbor dashboard page") < text.index("7420")


def test_coverage_still_decides_whether_anything_answers() -> None:
    calls: list[int] = []

    def ranker(question: str, sentences: Sequence[str]) -> list[float]:
        calls.append(len(sentences))
        return [1.0] * len(sentences)

    text, used = extract_answer("How do I rotate the signing keys of the vault?", [CHUNK], ranker=ranker)
    assert text == "" and used == [] and calls == []


def test_questions_in_other_languages_keep_the_lexical_order(reranker: CrossEncoderReranker) -> None:
    assert answer_sentence_ranker__cross_encoder(reranker, LanguageGuess("en", 0.99)) is not None
    assert answer_sentence_ranker__cross_encoder(reranker, LanguageGuess("de", 0.99)) is None
    assert answer_sentence_ranker__cross_encoder(reranker, LanguageGuess(None, 0.0)) is None


def test_the_variant_runs_in_the_graph_and_the_reply_says_which_ranker_ordered_it(harbor: Harbor) -> None:
    service = harbor.service()
    default = service.answer(QUESTION)  # the default reads each sentence twice, and its passage's retrieval score
    assert default["status"] == "answered" and "7420" in default["answer"]
    assert default["sentence_ranker"] == default["variants"]["sentence_ranker"] == "cross_encoder_vectors_rank"
    vectors = service.answer(QUESTION, variants={"sentence_ranker": "cross_encoder_vectors"})
    assert vectors["sentence_ranker"] == "cross_encoder_vectors" and "7420" in vectors["answer"]
    no_reranker = service.answer(QUESTION, variants={"sentence_ranker": "vectors_rank"})  # no cross-encoder read
    assert no_reranker["sentence_ranker"] == "vectors_rank" and "7420" in no_reranker["answer"]
    alone = service.answer(QUESTION, variants={"sentence_ranker": "cross_encoder"})
    assert alone["sentence_ranker"] == alone["variants"]["sentence_ranker"] == "cross_encoder"
    lexical = service.answer(QUESTION, variants={"sentence_ranker": "lexical"})
    assert lexical["sentence_ranker"] == "lexical" and lexical["variants"]["sentence_ranker"] == "lexical"
    chosen = service.answer(QUESTION, variants={"sentence_ranker": "asked"})  # by what it asks: the port, a number
    assert chosen["sentence_ranker"] == "asked" and "7420" in chosen["answer"]


def test_the_answer_analyzer_variant_runs_in_the_graph(harbor: Harbor) -> None:
    service = harbor.service()
    question = "How long does Harbor keep build logs?"  # the page says "Harbor keeps build logs for 14 days"
    # The analyzer's effect on the lexical order (the `asked` default reads the same words through its features).
    default = service.answer(question, variants={"sentence_ranker": "lexical"})
    assert default["variants"]["answer_analyzer"] == "snowball"
    assert default["answer"].startswith("Harbor keeps build logs for 14 days [C:")
    assert "retention_days | 14" not in default["answer"]  # the table row says less: not within reach of the best
    plain = service.answer(question, variants={"answer_analyzer": "plain", "sentence_ranker": "lexical"})
    # To the plain analyzer "keeps" is not "keep": the best sentence scores lower, and the weaker row joins it.
    assert plain["variants"]["answer_analyzer"] == "plain" and "retention_days | 14" in plain["answer"]


def test_the_answer_gate_stops_an_answer_that_only_shares_the_questions_words(harbor: Harbor) -> None:
    service = harbor.service()
    question = "Who wrote the harbor dashboard?"  # no page says; the ports section shares its words
    off = service.answer(question)
    assert off["status"] == "answered" and off["answer_gate"] is None  # the gate is off by default
    gated = service.answer(question, variants={"answer_gate": "cross_encoder"})
    assert gated["status"] == "no_answer" and gated["citations"] == []
    assert gated["answer_gate"]["answers"] is False and gated["answer_gate"]["best_score"] < -4
    answered = service.answer(QUESTION, variants={"answer_gate": "cross_encoder"})
    assert answered["status"] == "answered" and "7420" in answered["answer"]
    assert answered["answer_gate"]["answers"] is True and answered["answer_gate"]["sentences_read"] >= 1
