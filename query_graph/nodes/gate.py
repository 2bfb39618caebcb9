"""Topic-gate node: similarity of the question to the corpus centroid, against a calibrated floor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.guardrails.topic_gate import GateDecision, decide


@dataclass(frozen=True)
class TopicSetup:
    """The active version's corpus centroid and the floor in force (either None: the gate is open)."""

    centroid: np.ndarray | None
    floor: float | None


def topic_gate(query_embedding: np.ndarray, topic_setup: TopicSetup) -> GateDecision:
    """Below the floor the question is off-topic and the reply is `no_answer`, for one dot product."""
    return decide(query_embedding, topic_setup.centroid, topic_setup.floor)
