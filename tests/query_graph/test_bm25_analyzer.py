"""The BM25 analyzer an index was built with is the one its questions go through."""

from __future__ import annotations

import pytest

from assets.build import build_index
from pipelines import bm25
from pipelines.indexing import BuildRequest
from pipelines.profiles import Stores
from pipelines.settings import Settings
from query_graph.service import QueryService

QUESTION = "retried uploading"  # the fixture says "retries a failed upload": only stems meet


def test_stemming_meets_word_forms_and_keeps_identifiers_whole() -> None:
    stem = bm25.analyzer("english_stem")
    assert stem("uploads retried") == stem("uploading retries") == ["upload", "retri"]
    assert "retention_days" in stem("retention_days") and "16.11.1" in stem("version 16.11.1")
    assert bm25.query_vector("uploads", "english_stem") == bm25.query_vector("uploading", "english_stem")
    assert bm25.query_vector("uploads") != bm25.query_vector("uploading")
    with pytest.raises(ValueError, match="unknown BM25 analyzer 'porter'"):
        bm25.analyzer("porter")


@pytest.mark.parametrize("name", ["plain", "english_stem"])
def test_the_active_version_decides_how_questions_are_analysed(settings: Settings, stores: Stores, name: str) -> None:
    built_with = settings.model_copy(update={"bm25_analyzer": name})
    outcome = build_index(built_with, stores, BuildRequest.from_settings(built_with))
    assert stores.registry.active().chunk_settings["bm25_analyzer"] == name
    # The serving settings say nothing of the analyzer: the version's record decides.
    reply = QueryService(settings, stores).answer(QUESTION, variants={"retrieval": "bm25"})
    bm25_pages = {r["document_id"] for r in reply["retrieved"] if r["bm25_rank"] is not None}
    if name == "english_stem":
        assert "reference/cli.md" in bm25_pages, reply["retrieved"]
    else:
        assert "reference/cli.md" not in bm25_pages
    assert outcome.version == stores.registry.active().version
