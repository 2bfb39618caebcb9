"""Dense feedback (`dense_feedback=rocchio`): the moved vector, and the variant in the graph on a real index."""

from __future__ import annotations

import numpy as np
import pytest
from structlog.testing import capture_logs

from pipelines.retrieval.dense_feedback import moved_vector
from tests.query_graph.harbor import Harbor

QUESTION = "Which port does the harbor dashboard listen on?"


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_question_moves_toward_the_mean_of_its_first_hits_and_stays_unit_length() -> None:
    question = np.asarray([2.0, 0.0, 0.0], dtype=np.float32)  # not unit length: it is made so first
    hits = np.stack([_unit(0.0, 1.0, 0.0), _unit(0.0, 1.0, 1.0)])
    moved = moved_vector(question, hits, 0.5)
    assert np.linalg.norm(moved) == pytest.approx(1.0)
    expected = _unit(1.0, 0.0, 0.0) + 0.5 * hits.mean(axis=0)
    assert np.allclose(moved, expected / np.linalg.norm(expected))
    mean = hits.mean(axis=0)
    assert moved @ mean > _unit(1.0, 0.0, 0.0) @ mean  # nearer the hits than the question was
    assert moved[0] > moved[1]  # the question still weighs most (1 against 0.5)
    # No hit to read: the question's own unit vector; weight 0: the same.
    assert np.allclose(moved_vector(question, np.zeros((0, 3), np.float32)), _unit(1.0, 0.0, 0.0))
    assert np.allclose(moved_vector(question, hits, 0.0), _unit(1.0, 0.0, 0.0))


def test_the_variant_searches_again_in_the_graph_and_keeps_the_questions_cosines(harbor: Harbor) -> None:
    service = harbor.service()
    plain = service.answer(QUESTION, variants={"dense_feedback": "off"})
    reply = service.answer(QUESTION, variants={"dense_feedback": "rocchio"})
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["variants"]["dense_feedback"] == "rocchio"
    assert "fed_back_candidates" in reply["timings_ms"]
    # The candidates report the question's own cosine, not the moved vector's (CRAG and the topic gate grade it).
    cosines = {r["chunk_id"]: r["dense_score"] for r in plain["retrieved"]}
    shared = set(cosines) & {r["chunk_id"] for r in reply["retrieved"]}
    assert shared
    assert all(cosines[r["chunk_id"]] == r["dense_score"] for r in reply["retrieved"] if r["chunk_id"] in shared)


def test_without_a_sentence_table_the_first_list_stays_and_says_why(harbor: Harbor) -> None:
    service = harbor.service()
    off = {"dense_sentences": "off", "dense_feedback": "off"}
    plain = service.answer(QUESTION, variants=off)
    with capture_logs() as logs:
        reply = service.answer(QUESTION, variants={**off, "dense_feedback": "rocchio"})
    assert [r["chunk_id"] for r in reply["retrieved"]] == [r["chunk_id"] for r in plain["retrieved"]]
    assert any(e["event"] == "dense_feedback_unavailable" for e in logs)
