"""The topic gate's rules on plain vectors, and the reference passages it ships with."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipelines.guardrails.topic_gate import decide, reference_passages, reference_path


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


DOCS, GENERAL = _unit(1, 0, 0), _unit(0, 1, 0)


def test_a_question_nearer_the_reference_than_the_docs_is_off_topic_without_a_floor() -> None:
    near_docs, near_general = _unit(0.8, 0.6, 0), _unit(0.6, 0.8, 0)
    assert decide(near_docs, DOCS, None, GENERAL).passed
    verdict = decide(near_general, DOCS, None, GENERAL)
    assert not verdict.passed and verdict.reference_similarity is not None
    assert verdict.as_reply() == {"passed": False, "similarity": 0.6, "floor": None, "reference_similarity": 0.8}


def test_the_floor_and_the_reference_each_decline_on_their_own() -> None:
    near_docs = _unit(0.8, 0.6, 0)
    assert not decide(near_docs, DOCS, 0.9, GENERAL).passed  # below the floor though nearer the docs
    assert decide(near_docs, DOCS, 0.5, GENERAL).passed
    assert decide(_unit(0.6, 0.8, 0), DOCS, None, None).passed  # no floor and no reference: open
    assert "reference_similarity" not in decide(near_docs, DOCS, 0.5).as_reply()


def test_without_a_corpus_centroid_the_gate_stays_open() -> None:
    assert decide(_unit(0, 1, 0), None, None, GENERAL).passed


def test_the_reference_passages_are_many_distinct_and_none_about_software(tmp_path: Path) -> None:
    passages = reference_passages()
    assert len(passages) >= 200 and len(set(passages)) == len(passages)
    assert not [p for p in passages if p.startswith("#")]
    words = {w.strip(".,;:()'\"").lower() for p in passages for w in p.split()}
    assert not words & {"software", "server", "database", "install", "configure", "python", "api", "code"}
    # A changed passage set or another model gets its own centroid file.
    first = reference_path(tmp_path, "model-a", passages)
    assert first != reference_path(tmp_path, "model-b", passages)
    assert first != reference_path(tmp_path, "model-a", passages[1:])
