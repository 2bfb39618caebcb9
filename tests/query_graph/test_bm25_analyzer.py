"""The BM25 analyzer an index was built with is the one its questions go through."""

from __future__ import annotations

import pytest

from assets.build import build_index
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores
from pipelines.settings import Settings
from pipelines.text import analysis
from query_graph.service import QueryService

QUESTION = "retried uploading"  # the fixture says "retries a failed upload": only stems meet


def test_stemming_meets_word_forms_and_keeps_identifiers_whole() -> None:
    stem = analysis.analyzer("english_stem")
    assert stem("uploads retried") == stem("uploading retries") == ["upload", "retri"]
    assert "retention_days" in stem("retention_days") and "16.11.1" in stem("version 16.11.1")
    assert analysis.query_vector("uploads", "english_stem") == analysis.query_vector("uploading", "english_stem")
    assert analysis.query_vector("uploads") != analysis.query_vector("uploading")
    with pytest.raises(ValueError, match="unknown BM25 analyzer 'porter'"):
        analysis.analyzer("porter")


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
