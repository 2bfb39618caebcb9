"""Dense search that reads chunks' sentences (`dense_sentences`): the scores of a table, the table built from a real
index and its embedding cache, and the variant in the graph."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.answering.sentence_vectors import own_shown_texts
from pipelines.documents import chunk_key
from pipelines.ports import Ranked
from pipelines.retrieval.sentence_units import SentenceTable, SentenceUnitsCache, with_sentences
from tests.query_graph.harbor import Harbor


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_chunk_with_one_sentence_near_the_question_rises_by_max_and_less_by_mean() -> None:
    question = _unit(1.0, 0.0, 0.0)
    table = SentenceTable(
        keys=["broad", "close", "bare"],
        # "broad" says many things: its own vector is far from the question, one of its sentences is the question.
        chunk_vectors=np.stack([_unit(0.5, 1.0, 0.0), _unit(0.9, 0.3, 0.0), _unit(0.2, 0.0, 1.0)]),
        sentence_vectors=np.stack([_unit(0.0, 1.0, 0.0), _unit(1.0, 0.05, 0.0), _unit(0.8, 0.6, 0.0)]),
        owner=np.asarray([0, 0, 1]),
    )
    chunk = table.chunk_vectors @ question
    best = table.scores(question, "max")
    assert best[0] == pytest.approx(float(_unit(1.0, 0.05, 0.0) @ question))  # its best sentence, not its cosine
    assert best[1] == pytest.approx(chunk[1])  # its sentence (0.8) is below its own cosine (0.95)
    assert best[2] == pytest.approx(chunk[2])  # no sentence: its cosine
    assert [h.key for h in table.ranked(question, "max", 3)] == ["broad", "close", "bare"]
    mean = table.scores(question, "mean")
    assert mean[0] == pytest.approx((chunk[0] + best[0]) / 2)
    assert [h.key for h in table.ranked(question, "mean", 2)] == ["close", "broad"]
    with pytest.raises(ValueError, match="max, mean"):
        table.scores(question, "off")


def test_a_lane_without_a_table_keeps_the_stores_list() -> None:
    store = [[Ranked("a", 0.9)], [Ranked("b", 0.8)]]
    table = SentenceTable(["c"], np.stack([_unit(1.0, 0.0)]), np.zeros((0, 2), np.float32), np.zeros(0, np.int64))
    out = with_sentences(store, ["en", "de"], lambda lang: table if lang == "en" else None, _unit(1.0, 0.0), "max", 5)
    assert out[0] == [Ranked("c", pytest.approx(1.0))] and out[1] == store[1]


def test_one_table_serves_every_lane_each_with_its_own_languages_chunks() -> None:
    vectors = np.stack([_unit(1.0, 0.0), _unit(0.9, 0.1), _unit(0.0, 1.0)])
    none = np.zeros((0, 2), np.float32)
    table = SentenceTable(["en-a", "de-a", "en-b"], vectors, none, np.zeros(0, np.int64), ("en", "de", "en"))
    question = _unit(1.0, 0.0)
    assert [h.key for h in table.ranked(question, "max", 5, "en")] == ["en-a", "en-b"]
    assert [h.key for h in table.ranked(question, "max", 5, "de")] == ["de-a"]
    assert [h.key for h in table.ranked(question, "max", 5)] == ["en-a", "de-a", "en-b"]  # the whole-index lane


def test_the_table_holds_every_chunk_and_its_own_sentences_from_the_build(harbor: Harbor) -> None:
    service = harbor.service()
    version, index = service.active()
    strategy = harbor.settings.chunk_strategy
    of = SentenceUnitsCache(harbor.settings.data_dir, own_shown_texts).source(
        version.version, index, strategy, service.embedder
    )
    table = of(None)
    chunks = index.scroll_chunks(strategy)
    assert table is not None and set(table.keys) == {chunk_key(c.chunk_id) for c in chunks}
    # The build embedded every own sentence (the `sentence_vectors` asset): none is missing, each owned by one chunk.
    assert len(table.owner) == sum(len(dict.fromkeys(own_shown_texts(c))) for c in chunks) > len(chunks)
    assert np.allclose(np.linalg.norm(table.sentence_vectors, axis=1), 1.0, atol=1e-3)
    assert of(None) is table  # once per index version and view
    # Without the build's embedding cache there is nothing to read: the store's dense list, not a guess.
    elsewhere = SentenceUnitsCache(harbor.settings.data_dir / "elsewhere", own_shown_texts)
    assert elsewhere.source(version.version, index, strategy, service.embedder)(None) is None


def test_the_variant_runs_in_the_graph_and_the_candidates_keep_their_cosines(harbor: Harbor) -> None:
    service = harbor.service()
    question = "Which port does the harbor dashboard listen on?"
    plain = service.answer(question, variants={"retrieval": "dense", "dense_sentences": "off"})
    reply = service.answer(question, variants={"retrieval": "dense", "dense_sentences": "max"})
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["variants"]["dense_sentences"] == "max"
    assert len(service.back.sentence_units._tables) == 1
    # Fusion orders by the sentences' scores; each candidate still reports the store's cosine (CRAG grades it).
    cosines = {r["chunk_id"]: r["dense_score"] for r in plain["retrieved"]}
    assert set(cosines) & {r["chunk_id"] for r in reply["retrieved"]}
    assert all(cosines.get(r["chunk_id"], r["dense_score"]) == r["dense_score"] for r in reply["retrieved"])
