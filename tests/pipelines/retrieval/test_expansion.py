"""Query expansion by a written passage (pipelines/retrieval/expansion.py): the dense vector is the mean of the
question's and the passage's, BM25 reads the passage's terms below the question's, and on the real in-memory BM25
engine the passage finds the chunk that shares its vocabulary but not the question's."""

from __future__ import annotations

import numpy as np

from pipelines.documents import Chunk
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.retrieval.expansion import (
    EXPANSION_WEIGHT,
    expanded_embedding,
    expanded_terms,
    expansion_messages,
    written_passage,
)

TEXTS = {
    "prune": "The harbor prune command deletes artefacts older than the retention period.",
    "sync": "The harbor sync command uploads local artefacts to the registry.",
    "ports": "The dashboard listens on port 7420 by default.",
    "install": "Install harbor with pip install harbor-cli on Linux and macOS.",
}
QUESTION = "How do I get rid of stale stuff that piles up?"
PASSAGE = "Run harbor prune: it deletes artefacts older than the retention period you configured."


def chunk(name: str) -> Chunk:
    return Chunk(name, f"{name}.md", name, [], "", f"file:///{name}.md", "heading", "en", 0, TEXTS[name])


def test_the_expanded_vector_is_the_unit_mean_of_question_and_passage() -> None:
    question, passage = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    vector = expanded_embedding(question, passage)
    assert np.isclose(np.linalg.norm(vector), 1.0)
    assert np.isclose(vector @ question, vector @ passage) and vector @ question > 0.7
    # A passage pointing exactly away leaves the question's own vector, never a zero vector.
    assert np.allclose(expanded_embedding(question, -question), question)


def test_the_passage_terms_weigh_less_than_the_question_terms() -> None:
    weights = expanded_terms("Which port does harbor use?", "Harbor listens on port 7420.", "snowball", "en")
    assert weights["port"] == 1.0 and weights["harbor"] == 1.0  # in the question: full weight, even if repeated
    assert weights["listen"] == EXPANSION_WEIGHT and weights["7420"] == EXPANSION_WEIGHT
    assert expanded_terms("Which port?", "", "snowball", "en") == {"port": 1.0}


def test_the_model_is_asked_for_a_passage_and_its_reply_is_stripped() -> None:
    asked: list[list[dict[str, str]]] = []

    def write(messages: list[dict[str, str]]) -> str:
        asked.append(messages)
        return "  Harbor listens on port 7420.\n"

    assert written_passage(" Which port? ", write) == "Harbor listens on port 7420."
    assert asked == [expansion_messages("Which port?")]
    assert asked[0][0]["role"] == "system" and "Question: Which port?" in asked[0][1]["content"]


def test_the_passage_finds_the_chunk_in_its_words_when_the_question_shares_none() -> None:
    bm25 = MemoryBM25.build([chunk(name) for name in TEXTS], "snowball")
    plain = [h.chunk.chunk_id for h in bm25.search(QUESTION, 4, "en")]
    assert "prune" not in plain  # no word of the question is in the prune chunk
    expanded = [h.chunk.chunk_id for h in bm25.search_weighted(expanded_terms(QUESTION, PASSAGE, "snowball", "en"), 4)]
    assert expanded[0] == "prune"
