"""BM25 feedback (pipelines/retrieval/feedback.py) on the real in-memory BM25 engine: the top chunks' heaviest
terms join the question at a fraction of its weight, and the expanded query finds a chunk that shares the
answer's vocabulary but not the question's."""

from __future__ import annotations

from pipelines.documents import Chunk, chunk_key
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.retrieval.feedback import expanded_query, expansion_terms, weighted_query

TEXTS = {
    "patch": "Partial updates use PATCH: send only the data to update with exclude_unset, leave the rest intact.",
    "model": "Model updates copy a stored item with model_copy and an update dict; exclude_unset skips defaults.",
    "ports": "The dashboard listens on port 7420 and the API on port 7421 by default.",
    "logs": "Build logs are kept for 30 days; retention_days changes how long.",
    "client": "A client sends requests to the server and reads the replies.",
}
QUESTION = "How can a client change just one field of a stored item?"


def chunk(name: str) -> Chunk:
    return Chunk(name, f"{name}.md", name, [], "", f"file:///{name}.md", "heading", "en", 0, TEXTS[name])


def engine() -> MemoryBM25:
    return MemoryBM25.build([chunk(name) for name in TEXTS], "snowball")


def test_expansion_takes_the_heaviest_new_terms_of_the_feedback_chunks() -> None:
    bm25 = engine()
    weights = bm25.term_weights(chunk_key("patch"))
    counts = bm25.term_counts(chunk_key("patch"))
    assert weights["exclude_unset"] == max(bm25.idf["exclude_unset"], 0) * counts["exclude_unset"] / sum(
        counts.values()
    )
    terms = expansion_terms({"client"}, [weights], 5)
    assert len(terms) == 5 and "client" not in dict(terms)
    assert [s for _, s in terms] == sorted((s for _, s in terms), reverse=True)
    assert "exclude_unset" in dict(terms) or "patch" in dict(terms)
    assert bm25.term_counts("no such chunk") == {} and bm25.term_weights("no such chunk") == {}
    # Two feedback chunks add up: a term in both outweighs one in a single chunk of the same weight.
    both = expansion_terms(set(), [{"patch": 1.0, "port": 1.0}, {"patch": 1.0}], 2)
    assert both == [("patch", 2.0), ("port", 1.0)]


def test_added_terms_weigh_less_than_the_question() -> None:
    weights = weighted_query({"client", "field"}, [("patch", 2.0), ("exclude_unset", 1.0)], 0.2)
    assert weights == {"client": 1.0, "field": 1.0, "patch": 0.2, "exclude_unset": 0.1}
    assert weighted_query({"client"}, [], 0.2) == {"client": 1.0}
    # A term of the question that the feedback also proposes keeps its full weight.
    assert weighted_query({"patch"}, [("patch", 1.0)], 0.2) == {"patch": 1.0}


def test_feedback_finds_a_chunk_with_the_answer_vocabulary_only() -> None:
    bm25 = engine()
    plain = [h.chunk.chunk_id for h in bm25.search(QUESTION, 5, "en")]
    assert "model" in plain and "patch" not in plain  # no word of the question is in the PATCH chunk
    weights = expanded_query(QUESTION, [chunk_key("model")], bm25, "en", 20, 0.2)
    assert max(w for t, w in weights.items() if w < 1.0) == 0.2
    expanded = [h.chunk.chunk_id for h in bm25.search_weighted(weights, 5)]
    assert "patch" in expanded and expanded[0] == "model"  # the feedback chunk stays first
    # A chunk that shares only common words with the feedback chunk ranks below the one sharing its terms.
    assert "ports" not in expanded or expanded.index("patch") < expanded.index("ports")
