"""The cross-encoder-and-vectors sentence ranker with the packaged models: what it adds to the cross-encoder's
reading, and when it leaves that reading alone."""

from __future__ import annotations

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.answering.sentence_vectors import (
    VECTOR_SPREAD,
    shown_texts,
    unit_headings,
    unit_passage_scores,
    vector_ranker,
)
from pipelines.documents import Document
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.retrieval.rerank import CrossEncoderReranker

CROSS_ENCODER = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
EMBEDDER = load_embedder("bge-small-en-v1.5-int8")

PAGE = """# Sessions

## Signing

Sessions are signed with the secret key so the client cannot change them.

## Permanent session lifetime

A permanent session outlives the browser window. The default is 31 days.
"""
QUESTION = "How long does a permanent session last by default?"


def chunks() -> list:
    clean, title = clean_markdown(PAGE)
    page = Document("sessions.md", "file:///sessions.md", clean, "h", "now", title=title or "Sessions")
    return chunk_document(page, "heading", EMBEDDER.count_tokens)


def test_each_sentence_is_read_under_its_own_heading() -> None:
    headings = unit_headings(chunks())
    assert headings["The default is 31 days."] == "Sessions > Permanent session lifetime"
    assert headings["Sessions are signed with the secret key so the client cannot change them."] == "Sessions > Signing"


def test_the_sum_of_both_readings_as_z_scores_and_the_heading_counts() -> None:
    headings = unit_headings(chunks())
    texts = list(headings)
    assert len(texts) == 3
    vector = EMBEDDER.embed_query(QUESTION)
    scores = np.asarray(vector_ranker(CROSS_ENCODER, EMBEDDER.embed_passages, vector, headings)(QUESTION, texts))
    read = np.asarray(list(CROSS_ENCODER(QUESTION, texts)), dtype=float)
    cosine = EMBEDDER.embed_passages([f"{headings[t]}: {t}" for t in texts]) @ vector
    summed = (read - read.mean()) / read.std() + (cosine - cosine.mean()) / cosine.std()
    expected = read.mean() + read.std() * (summed - summed.mean()) / summed.std()
    assert np.allclose(scores, expected, atol=1e-5)
    # On the cross-encoder's scale: the same mean and spread, so the answer's logit margin means what it meant.
    assert np.isclose(scores.mean(), read.mean()) and np.isclose(scores.std(), read.std())
    assert texts[int(np.argmax(scores))] == "The default is 31 days."
    # The heading is part of what the embedding model reads: without it the same texts score otherwise.
    bare = np.asarray(vector_ranker(CROSS_ENCODER, EMBEDDER.embed_passages, vector, {})(QUESTION, texts))
    assert not np.allclose(bare, scores, atol=1e-3)


def test_two_spans_keep_the_cross_encoders_scores() -> None:
    spans = ["A permanent session outlives the browser window.", "A permanent session outlives the browser window. "
             "The default is 31 days."]  # fmt: skip
    ranker = vector_ranker(
        CROSS_ENCODER, EMBEDDER.embed_passages, EMBEDDER.embed_query(QUESTION), unit_headings(chunks())
    )
    assert np.allclose(ranker(QUESTION, spans), list(CROSS_ENCODER(QUESTION, spans)))


def test_the_passage_score_is_a_third_reading_and_a_span_counts_as_the_lowest() -> None:
    headings = unit_headings(chunks())
    texts = list(headings)
    vector = EMBEDDER.embed_query(QUESTION)
    both = vector_ranker(CROSS_ENCODER, EMBEDDER.embed_passages, vector, headings)(QUESTION, texts)
    signing = "Sessions are signed with the secret key so the client cannot change them."
    passages = {t: (1.0 if t == signing else 0.0) for t in texts}
    three = vector_ranker(CROSS_ENCODER, EMBEDDER.embed_passages, vector, headings, passages)(QUESTION, texts)
    at = texts.index(signing)
    # The sentence of the better-matched passage rises against the others; every score stays on the same scale.
    assert three[at] - max(np.delete(three, at)) > both[at] - max(np.delete(both, at))
    assert np.isclose(np.std(three), np.std(list(CROSS_ENCODER(QUESTION, texts))))
    unknown = vector_ranker(CROSS_ENCODER, EMBEDDER.embed_passages, vector, headings, {signing: 1.0, texts[0]: 0.5})
    assert len(unknown(QUESTION, texts)) == 3  # a text missing from the scores counts as the lowest


def test_each_unit_keeps_its_best_passage_score() -> None:
    page = chunks()
    scores = unit_passage_scores([(chunk, 0.2) for chunk in page] + [(chunk, 0.7) for chunk in page])
    assert set(scores) == set(unit_headings(page)) and set(scores.values()) == {0.7}


def test_without_the_cross_encoder_the_cosine_and_the_passage_score_decide() -> None:
    headings = unit_headings(chunks())
    texts = list(headings)
    vector = EMBEDDER.embed_query(QUESTION)
    cosine = EMBEDDER.embed_passages([f"{headings[t]}: {t}" for t in texts]) @ vector
    passages = {t: float(n) for n, t in enumerate(texts)}
    scores = np.asarray(vector_ranker(None, EMBEDDER.embed_passages, vector, headings, passages)(QUESTION, texts))
    place = np.arange(len(texts), dtype=float)
    summed = (cosine - cosine.mean()) / cosine.std() + (place - place.mean()) / place.std()
    assert np.allclose(scores, VECTOR_SPREAD * (summed - summed.mean()) / summed.std(), atol=1e-5)
    assert texts[int(np.argmax(scores))] == "The default is 31 days."
    # Two spans: the cosine alone, on the same scale; no cross-encoder is read at all.
    spans = texts[:2]
    two = vector_ranker(None, EMBEDDER.embed_passages, vector, headings, passages)(QUESTION, spans)
    alone = EMBEDDER.embed_passages([f"{headings[t]}: {t}" for t in spans]) @ vector  # a batch pads as it is
    assert np.allclose(two, VECTOR_SPREAD * alone, atol=1e-5)


def test_a_build_embeds_ahead_every_text_the_ranker_reads() -> None:
    page = PAGE + '\n## Configuring\n\nSet the lifetime in the config file:\n\n```toml\nlifetime = "31d"\n```\n'
    clean, title = clean_markdown(page)
    passages = chunk_document(
        Document("s.md", "file:///s.md", clean, "h", "now", title=title), "heading", EMBEDDER.count_tokens
    )
    read: list[str] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        read.extend(texts)
        return EMBEDDER.embed_passages(texts)

    headings = unit_headings(passages)
    vector_ranker(CROSS_ENCODER, embed, EMBEDDER.embed_query(QUESTION), headings)(QUESTION, list(headings))
    assert any('lifetime = "31d"' in text for text in read)  # a sentence read with the block it introduces
    assert read and set(read) <= set(shown_texts(passages))
