"""Query expansion by a written passage (`query_expansion=passage`, docs/decisions/query-expansion.md).

A question phrased in other words than the page, or asking about two pages, shares few words and little meaning
with the passages that answer it. A language model writes the passage the documentation might hold in answer
(HyDE, Gao et al. 2022; query2doc, Wang et al. 2023), and both retrievers search with it beside the question:

- dense: the mean of the question's embedding and the written passage's (embedded as a passage), renormalised,
  as HyDE averages the question with its written documents;
- BM25: the question's terms at weight 1, the passage's other terms at `EXPANSION_WEIGHT` (query2doc repeats the
  question five times before one passage: each of its terms weighs five times a passage term).

The passage may be wrong: it only moves the search, and every answer still quotes and cites the pages found.
A model that fails or times out leaves the question's own search (no expansion), never a failed query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipelines.adapters.llm_harness import LLMHarness
from pipelines.ports import Embedder
from pipelines.text import analysis

EXPANSION_WEIGHT = 0.2  # query2doc's five copies of the question beside one passage
EXPANSION_TOKENS = 96  # the passage's length budget: two or three sentences

EXPAND_SYSTEM = "You write software documentation. Reply with the passage only, no preamble."
EXPAND_ASK = (
    "Write the short passage (two or three sentences) of the documentation that answers this question, naming the "
    "functions, options or settings it would use.\n\nQuestion: {question}"
)

# Writes a passage for messages (a model's reply); raises when the model is unavailable.
Writer = Callable[[list[dict[str, str]]], str]


def expansion_messages(question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": EXPAND_SYSTEM},
        {"role": "user", "content": EXPAND_ASK.format(question=question.strip())},
    ]


def written_passage(question: str, write: Writer) -> str:
    """The model's passage for the question, stripped; empty when it wrote nothing."""
    return write(expansion_messages(question)).strip()


def model_passage(question: str, harness: LLMHarness) -> str:
    """The passage the harness's model writes for the question (`GenerationUnavailable` when it cannot)."""
    return written_passage(question, lambda messages: harness.complete(messages, EXPANSION_TOKENS).text)


def searched_vector(question_vector: np.ndarray, passage: str, embedder: Embedder) -> np.ndarray:
    """The vector dense search reads: the question's own, or its mean with the written passage's."""
    if not passage:
        return question_vector
    return expanded_embedding(question_vector, embedder.embed_passages([passage])[0])


def expanded_embedding(question_vector: np.ndarray, passage_vector: np.ndarray) -> np.ndarray:
    """The mean of the question's and the written passage's unit vectors, back to unit length."""
    mean = (np.asarray(question_vector, dtype=np.float32) + np.asarray(passage_vector, dtype=np.float32)) / 2.0
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else np.asarray(question_vector, dtype=np.float32)


def expanded_terms(
    question: str,
    passage: str,
    analyzer_name: str,
    language: str | None,
    weight: float = EXPANSION_WEIGHT,
) -> dict[str, float]:
    """BM25 query weights: the question's analysed terms at 1, the passage's other terms at `weight`."""
    words = analysis.analyzer(analyzer_name)
    terms = {term: weight for term in words(passage, language)}
    terms.update({term: 1.0 for term in words(question, language)})
    return terms
