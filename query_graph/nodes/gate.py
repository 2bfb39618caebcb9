"""Topic-gate node: similarity of the question to the corpus centroid, against a calibrated floor and (English
questions) against the general-knowledge reference centroid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.guardrails.topic_gate import REFERENCE_LANGUAGE, GateDecision, decide
from pipelines.text.language import LanguageGuess


@dataclass(frozen=True)
class TopicSetup:
    """The active version's corpus centroid, the floor in force and the reference centroid (a centroid None: the gate
    is open; the floor or the reference None: that rule is off)."""

    centroid: np.ndarray | None
    floor: float | None
    reference: np.ndarray | None = None


def topic_gate(query_embedding: np.ndarray, topic_setup: TopicSetup, guardrail_language: LanguageGuess) -> GateDecision:
    """Below the floor, or nearer general knowledge than the corpus, the question is off-topic and the reply is
    `no_answer`, for one or two dot products. The reference passages are English: a question in another language
    is not compared with them."""
    english = guardrail_language.language == REFERENCE_LANGUAGE
    reference = topic_setup.reference if english else None
    return decide(query_embedding, topic_setup.centroid, topic_setup.floor, reference)
