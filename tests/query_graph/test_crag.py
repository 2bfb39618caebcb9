"""CRAG: bands, the deterministic rewrite, knowledge strips, band fitting, and the graded node on a real index."""

from __future__ import annotations

import pytest

from pipelines.answering.crag import Bands, action, fit_bands, knowledge_strips, rewrite_query
from pipelines.text.analysis import analyzer
from tests.query_graph.harbor import Harbor

OFF_TOPIC = "What is the boiling point of mercury in kelvin?"
PORT_Q = "Which port does the harbor dashboard listen on?"


def test_action_follows_the_bands() -> None:
    bands = Bands(0.4, 0.7)
    assert [action(s, bands) for s in (0.9, 0.7, 0.5, 0.4, 0.39, None)] == [
        "generate",
        "generate",
        "refine",
        "refine",
        "rewrite",
        "rewrite",
    ]
    with pytest.raises(ValueError, match="above the upper band"):
        Bands(0.8, 0.2)


def test_rewrite_drops_question_words_and_expands_identifiers() -> None:
    assert rewrite_query("How do I set max_workers?") == "set max_workers max workers"
    rewritten = rewrite_query("What does OAuth2PasswordRequestForm return?")
    assert rewritten.startswith("OAuth2PasswordRequestForm") and "password" in rewritten.split()
    assert rewrite_query("what is it?") == "what is it?"  # nothing left: keep the question


def test_knowledge_strips_keep_the_relevant_sentences() -> None:
    text = "Harbor reads harbor.toml. The dashboard listens on port 7420 by default. Logs are kept 14 days."
    assert knowledge_strips("Which port does the dashboard use?", text) == (
        "The dashboard listens on port 7420 by default."
    )
    assert knowledge_strips("quantum chromodynamics", text) == text


def test_knowledge_strips_read_words_as_the_answer_does() -> None:
    # "ports" and "exposed" meet "exposes port" only stemmed: plain words keep nothing, so the whole passage.
    text = "The dashboard exposes port 7420. Builds run in containers."
    assert knowledge_strips("Which ports are exposed?", text) == text
    stemmed = knowledge_strips("Which ports are exposed?", text, words=analyzer("snowball"), language="en")
    assert stemmed == "The dashboard exposes port 7420."


def test_fit_bands_separates_answerable_from_unanswerable() -> None:
    scores = [0.91, 0.85, 0.8, 0.78, 0.74, 0.66, 0.52, 0.45, 0.40, 0.35]
    labels = [True, True, True, True, True, True, False, False, False, False]
    fit = fit_bands(scores, labels, target_recall=0.9, direct_precision=0.95)
    assert 0.52 < fit.bands.lower <= 0.74 and fit.bands.lower <= fit.bands.upper
    assert fit.answered_share >= 0.8 and fit.abstained_share == 1.0
    assert fit.tradeoff and all({"threshold", "answered", "abstained"} <= set(row) for row in fit.tradeoff)
    with pytest.raises(ValueError, match="one label per score"):
        fit_bands([0.5], [True, False])


def test_fit_bands_turns_no_answerable_question_away_for_nothing() -> None:
    answerable = [0.9, 0.88, 0.85, 0.83, 0.8, 0.78, 0.75, 0.72, 0.7, 0.61]
    # The 90% point sits between 0.61 and 0.7, but the only unanswerable score is far below both: the
    # lowest answerable question can be kept at no cost.
    fit = fit_bands([*answerable, 0.3], [True] * 10 + [False])
    assert 0.3 < fit.bands.lower <= 0.61 and fit.answered_share == 1.0 and fit.abstained_share == 1.0
    # With nothing to catch, nothing answerable is turned away either.
    alone = fit_bands(answerable, [True] * 10)
    assert alone.bands.lower <= 0.61 and alone.answered_share == 1.0
    # The band is stored to four decimals, rounded down: rounding up would turn away the question at it.
    exact = fit_bands([0.690472, 0.8, 0.9], [True, True, True], target_recall=1.0)
    assert exact.bands.lower == 0.6904 and exact.answered_share == 1.0
    # An unanswerable score among the answerable ones still sets the band where the target allows.
    mixed = fit_bands([*answerable, 0.65], [True] * 10 + [False])
    assert 0.65 < mixed.bands.lower <= 0.7 and mixed.answered_share == 0.9 and mixed.abstained_share == 1.0


def test_on_topic_question_is_generated_directly(harbor: Harbor) -> None:
    reply = harbor.service().answer(PORT_Q)
    assert reply["crag"]["action"] == "generate" and reply["crag"]["grade"] == "correct"
    assert reply["crag"]["scores"]["initial"] >= reply["crag"]["bands"]["upper"]


def test_off_topic_question_is_rewritten_once_then_no_answer(harbor: Harbor) -> None:
    reply = harbor.service().answer(OFF_TOPIC)
    crag = reply["crag"]
    assert reply["status"] == "no_answer" and reply["citations"] == []
    assert crag["action"] == "no_answer" and crag["rewritten_query"] == "boiling point mercury kelvin"
    assert crag["rewrite"] == "deterministic" and set(crag["scores"]) == {"initial", "rewritten"}


def test_middle_band_refines_the_context_into_strips(harbor: Harbor) -> None:
    reply = harbor.service(crag_lower=0.0, crag_upper=0.999).answer(PORT_Q)
    assert reply["crag"]["action"] == "refine" and reply["crag"]["grade"] == "ambiguous"
    assert reply["status"] == "answered" and "7420" in reply["answer"]


def test_a_rewrite_that_scores_better_is_used(harbor: Harbor) -> None:
    first = harbor.service(crag_lower=0.999, crag_upper=0.9999).answer(OFF_TOPIC)["crag"]["scores"]
    assert first["rewritten"] > first["initial"]  # measured above: the keywords are closer to something
    lower = (first["initial"] + first["rewritten"]) / 2
    reply = harbor.service(crag_lower=lower, crag_upper=0.9999).answer(OFF_TOPIC)
    assert reply["crag"]["action"] == "rewrite+refine"
    assert reply["retrieved"], "the second retrieval's candidates are shown"


def test_crag_off_skips_grading(harbor: Harbor) -> None:
    reply = harbor.service().answer(OFF_TOPIC, variants={"crag": "off"})
    assert reply["crag"] == {"action": "off"}
