"""Multi-vector dense search (pipelines/ingestion/dense_units.py): a chunk's units are cut by the chunker's rules,
embedded with the chunk's trail, stored as one MaxSim multivector beside the chunk's own vector, and a
dense search then scores each chunk by its best vector, on Qdrant Edge and on a Qdrant collection alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assets.build import build_index
from pipelines.adapters.embedders import load_embedder
from pipelines.documents import Document, chunk_key
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.chunkers import chunk_heading_packed
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.ingestion.dense_units import embedding_text, trail, unit_texts
from pipelines.profiles import open_stores
from pipelines.settings import Settings

# One long section: a paragraph about cache eviction buried among paragraphs about something else.
FILLER = (
    "The scheduler reads the job queue every few seconds and starts the next job when a worker is free. "
    "Workers report their progress to the scheduler, which shows it on the status page for operators. "
)
PAGE = "\n\n".join(
    [
        "# Harbor operations",
        "## Running jobs",
        FILLER * 3,
        FILLER * 3,
        "When the cache is full, Harbor evicts the least recently used entries first, down to 80 percent "
        "of the cache size limit.",
        FILLER * 3,
        "| setting | meaning |\n|---|---|\n"
        + "\n".join(f"| `queue_{i}` | How often queue {i} is polled, in seconds. |" for i in range(20)),
    ]
)
QUESTION = "What does Harbor evict when its cache is full?"


@pytest.fixture
def embedder():  # type: ignore[no-untyped-def]
    return load_embedder(Settings().embedding_model)


def page(path: str, text: str) -> Document:
    clean, title = clean_markdown(text)
    return Document(path, f"file:///{path}", clean, "h", "now", title=title or "")


def long_chunk(embedder) -> object:  # type: ignore[no-untyped-def]
    document = page("ops/jobs.md", PAGE)
    chunks = chunk_heading_packed(document, embedder.count_tokens, target=450, limit=500)
    return max(chunks, key=lambda c: embedder.count_tokens(c.text))


def test_units_are_cut_within_the_limit_and_carry_the_trail(embedder) -> None:  # type: ignore[no-untyped-def]
    chunk = long_chunk(embedder)
    units = unit_texts(chunk, embedder.count_tokens, 128)
    assert len(units) >= 3
    head = trail(chunk)
    assert head.startswith("Harbor operations")
    for unit in units:
        assert unit.startswith(head + "\n\n")
        assert embedder.count_tokens(unit[len(head) + 2 :]) <= 128
    # Every line of the chunk is in some unit (a cut table repeats its header): nothing is dropped.
    lines = [line for line in chunk.text.splitlines() if line.strip()]
    assert all(any(line in unit for unit in units) for line in lines)
    # A table longer than the limit is cut by rows, never inside one.
    table_units = [u for u in units if "`queue_" in u]
    assert len(table_units) >= 2
    assert all(line.startswith("|") for u in table_units for line in u[len(head) + 2 :].splitlines())


def test_a_chunk_of_one_unit_gets_no_extra_vectors(embedder) -> None:  # type: ignore[no-untyped-def]
    document = page("ops/short.md", "# Short\n\nHarbor listens on port 7420.\n")
    (chunk,) = chunk_heading_packed(document, embedder.count_tokens)
    assert unit_texts(chunk, embedder.count_tokens, 128) == []
    assert unit_texts(long_chunk(embedder), embedder.count_tokens, 0) == []


def test_tables_scope_cuts_only_the_tables(embedder) -> None:  # type: ignore[no-untyped-def]
    chunk = long_chunk(embedder)
    units = unit_texts(chunk, embedder.count_tokens, 128, scope="tables")
    head = trail(chunk)
    bodies = [u[len(head) + 2 :] for u in units]
    # Only table rows, each unit under the table's header, every row of the table in some unit.
    assert len(bodies) >= 2
    assert all(body.startswith("| setting | meaning |\n|---|---|") for body in bodies)
    assert all(line.startswith("|") for body in bodies for line in body.splitlines())
    rows = [line for line in chunk.text.splitlines() if "`queue_" in line]
    assert rows and all(any(row in body for body in bodies) for row in rows)
    # A chunk without a table keeps its one vector, and a chunk that is one small table adds nothing.
    prose = page("ops/prose.md", "# Prose\n\n" + FILLER * 6)
    (plain,) = chunk_heading_packed(prose, embedder.count_tokens)
    assert unit_texts(plain, embedder.count_tokens, 128, scope="tables") == []
    small = page("ops/table.md", "# Ports\n\n| port | use |\n|---|---|\n| 7420 | API |\n")
    (table,) = chunk_heading_packed(small, embedder.count_tokens)
    assert unit_texts(table, embedder.count_tokens, 128, scope="tables") == []
    with pytest.raises(ValueError, match="unknown dense unit scope"):
        unit_texts(chunk, embedder.count_tokens, 128, scope="rows")


def _maxsim(embedder, chunk, question_vector) -> float:  # type: ignore[no-untyped-def]
    vectors = embedder.embed_passages([embedding_text(chunk), *unit_texts(chunk, embedder.count_tokens, 128)])
    return float(np.max(vectors @ question_vector))


@pytest.mark.parametrize("store", ["edge", "qdrant_collection"])
def test_dense_search_scores_a_chunk_by_its_best_vector(
    settings: Settings, tmp_path: Path, corpus: Path, embedder, store: str
) -> None:  # type: ignore[no-untyped-def]
    (corpus / "ops").mkdir()
    (corpus / "ops" / "jobs.md").write_text(PAGE)
    if store == "edge":
        settings = settings.model_copy(update={"profile": "embedded", "qdrant_url": None})
    question = embedder.embed_query(QUESTION)
    scores = {}
    for tokens in (0, 128):
        units = {"dense_unit_tokens": tokens, "dense_unit_scope": "all"}  # the eviction paragraph is prose
        run = settings.model_copy(update={**units, "home": tmp_path / f"home{tokens}"})
        if store == "qdrant_collection":
            run = run.model_copy(update={"qdrant_url": f"local:{tmp_path / f'qdrant{tokens}'}"})
        stores = open_stores(run)
        try:
            built = build_index(run, stores, BuildRequest.from_settings(run))
            index = stores.open_index(built.summary["location"])
            try:
                assert index.dense_vector == ("units" if tokens else "dense")
                hits = index.dense_search(question, 50, strategy=run.chunk_strategy)
                target = next(h for h in hits if "evicts the least recently used" in h.chunk.text)
                ranked = {r.key: r.score for r in index.dense_ranked(question, 50, strategy=run.chunk_strategy)}
                assert ranked[chunk_key(target.chunk.chunk_id)] == pytest.approx(target.score)
                scores[tokens] = (target.chunk, target.score)
            finally:
                index.close()
        finally:
            stores.close()
    # int8 dynamic quantisation scales per batch, so a vector embedded alone differs slightly (< 0.01).
    chunk, without_units = scores[0]
    assert without_units == pytest.approx(
        float(embedder.embed_passages([embedding_text(chunk)])[0] @ question), abs=0.015
    )
    with_units = scores[128][1]
    # MaxSim over [chunk, units...]: the eviction paragraph alone matches the question far better.
    assert with_units == pytest.approx(_maxsim(embedder, scores[128][0], question), abs=0.015)
    assert with_units > without_units + 0.05


def test_a_writer_refuses_units_it_was_not_created_for(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    from pipelines.adapters.qdrant_edge import EdgeShardWriter
    from pipelines.text.analysis import SparseVector

    chunk = long_chunk(embedder)
    writer = EdgeShardWriter(tmp_path / "shard", 4)
    with pytest.raises(ValueError, match="units=False"):
        writer.upsert([chunk], np.ones((1, 4)), [SparseVector([1], [1.0])], [np.ones((2, 4))])
    writer.close()
