"""Dense feedback (`dense_feedback=rocchio`): the question's vector moved toward its first hits' vectors.

Rocchio's formula on a dense retriever's vectors (Li et al., "Pseudo Relevance Feedback with Deep Language Models and
Dense Retrievers: Successes and Pitfalls", TOIS 2023): the question's unit vector plus `FEEDBACK_WEIGHT` times the
mean of the first `FEEDBACK_PASSAGES` fused hits' chunk vectors, made unit length again, is searched once more. A
passage on the first hits' subject in other words than the question's can rise; no list is merged in. Neither
number was fitted here: they are the usual Rocchio settings of that paper's dense runs.
docs/decisions/dense-feedback.md.
"""

from __future__ import annotations

import numpy as np

FEEDBACK_PASSAGES = 3  # the first fused hits whose vectors move the question's
FEEDBACK_WEIGHT = 0.5  # their mean's weight against the question's unit vector (1)


def moved_vector(
    question_vector: np.ndarray, feedback_vectors: np.ndarray, weight: float = FEEDBACK_WEIGHT
) -> np.ndarray:
    """The question's unit vector plus `weight` times the mean of `feedback_vectors` (rows), unit length; the
    question's own unit vector when there are none."""
    q = np.asarray(question_vector, dtype=np.float32)
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    if feedback_vectors.size == 0:
        return q
    moved = q + weight * np.asarray(feedback_vectors, dtype=np.float32).mean(axis=0)
    return (moved / max(float(np.linalg.norm(moved)), 1e-12)).astype(np.float32)
