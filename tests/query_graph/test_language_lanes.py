"""Retrieval lanes in an index of translated pages: a question is searched in its own language, and the
source language (English) joins it by meaning; BM25 analyses each language as its chunks were."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.documents import Chunk, chunk_key
from pipelines.retrieval.language_lanes import Lane, lanes, lexical_languages
from pipelines.retrieval.translations import Originals, original_document
from pipelines.text import analysis
from tests.query_graph.harbor import Harbor, harbor_index

PAGES = {
    "en/guide/openapi.md": """# Hiding a route { #hiding }

To exclude a path operation from the generated OpenAPI schema, pass `include_in_schema=False` to the
route decorator. The route still answers requests; it is only missing from the documentation.
""",
    "es/guide/openapi.md": """# Ocultar una ruta { #hiding }

Para excluir una operación de ruta del esquema OpenAPI generado, pasa `include_in_schema=False` al
decorador de la ruta. La ruta sigue respondiendo peticiones; solo falta en la documentación.
""",
    "en/guide/uploads.md": """# Uploads { #uploads }

A failed upload is retried three times by Tidewater, the upload agent, with a growing pause between
the attempts, then reported to the operator as lost.
""",
    "es/guide/ports.md": """# Puertos { #ports }

El servidor escucha en el puerto 8600 de forma predeterminada. Cambia el puerto con la opción
`--port` al arrancar el servidor.
""",
    "es/guide/subidas.md": """# Subidas { #uploads }

Una subida fallida se intenta de nuevo varias veces antes de darla por perdida.
""",
    "zh/guide/lifespan.md": """# 生命周期 { #lifespan }

挂载的子应用不会执行主应用的生命周期事件，这些事件只会在主应用上执行。
""",
    "zh/guide/reload.md": """# 重新加载 { #reload }

开发时可以使用 --reload 选项，服务器会在代码改变后重新启动。
""",
}

SPANISH = "¿Cómo puedo ocultar una ruta del esquema OpenAPI generado por la documentación?"


@pytest.fixture(scope="module")
def babel(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("babel"), request, PAGES) as index:
        yield index


def _languages(reply: dict) -> set[str]:  # type: ignore[type-arg]
    return {r["language"] for r in reply["retrieved"]}


def test_routes_choose_the_lanes() -> None:
    held = ["en", "es", "zh"]
    source = Lane("en", False, "en", originals=True)
    assert lanes("question_and_source", "es", held, "en") == (Lane("es", True, "es"), source)
    assert lanes("question", "es", held, "en") == (Lane("es", True, "es"),)
    assert lanes("all", "es", held, "en") == (Lane(None, True, "es"),)
    # An English question has nothing to add from its own source; a language the index lacks gets the source.
    assert lanes("question_and_source", "en", held, "en") == (Lane("en", True, "en"),)
    assert lanes("question_and_source", "fr", held, "en") == (Lane("en", True, "en"),)
    # Unsure of the language, or one language only: the whole index, analysed in its language when it has one.
    assert lanes("question_and_source", None, held, "en") == (Lane(None, True, None),)
    assert lanes("question_and_source", "es", ["en"], "en") == (Lane(None, True, "en"),)
    # A pinned filter wins over any route.
    assert lanes("question_and_source", "es", held, "en", language_filter="zh") == (Lane("zh", True, "zh"),)
    with pytest.raises(ValueError, match="unknown language route 'nearest'"):
        lanes("nearest", "es", held, "en")


@pytest.mark.parametrize("route", ["question_and_source", "question", "all"])
@pytest.mark.parametrize(("held", "pinned"), [(["en", "es", "zh"], None), (["en"], None), (["en", "es"], "es")])
def test_lexical_languages_are_exactly_those_of_the_lexical_lanes(
    route: str, held: list[str], pinned: str | None
) -> None:
    """What a server warms (`lexical_languages`) is what questions in any language will search with BM25."""
    reached = {
        lane.language
        for question_language in [*held, "fr", None]
        for lane in lanes(route, question_language, held, "en", language_filter=pinned)
        if lane.lexical
    }
    assert set(lexical_languages(route, held, pinned)) == reached


def _chunk(document_id: str, anchor: str, language: str, position: int = 0, sections: list | None = None) -> Chunk:  # type: ignore[type-arg]
    extra = {"sections": sections} if sections else {}
    return Chunk(
        chunk_id=f"{document_id}#{position}",
        document_id=document_id,
        title="t",
        heading_path=[],
        anchor=anchor,
        source_uri=document_id,
        strategy="heading_packed",
        language=language,
        position=position,
        text="text",
        extra=extra,
    )


def test_a_translated_chunk_links_to_the_original_section() -> None:
    assert original_document("es/advanced/events.md", "en") == "en/advanced/events.md"
    assert original_document("runner/pt-BR/install.md", "en") == "runner/en/install.md"
    assert original_document("en/advanced/events.md", "en") is None
    assert original_document("guide/install.md", "en") is None
    english = [
        _chunk("en/a.md", "intro", "en", 0, [[0, "intro"], [40, "hiding"]]),  # packed: two sections
        _chunk("en/a.md", "ports", "en", 1),
    ]
    spanish = [
        _chunk("es/a.md", "hiding", "es", 0),  # packed differently from the original
        _chunk("es/a.md", "ports", "es", 1),
        _chunk("es/a.md", "only-in-spanish", "es", 2),
        _chunk("es/b.md", "hiding", "es", 0),  # a page with no original
    ]
    table = Originals([*english, *spanish], "en")
    key = [chunk_key(c.chunk_id) for c in [*english, *spanish]]
    assert [table.of(k) for k in key[2:]] == [key[0], key[1], None, None]
    hits = [(key[3], 0.9), (key[4], 0.8), (key[2], 0.7)]
    assert table.lead(hits, [(key[0], 0.5)]) == [(key[1], 0.9), (key[0], 0.7)]


def test_snowball_stems_each_language_and_splits_cjk_into_bigrams() -> None:
    snowball = analysis.analyzer("snowball")
    english = "The uploads were retried; set retention_days to 16.11.1 in [runners.docker]"
    assert snowball(english, "en") == analysis.analyze_english_stem(english)  # English indexes are unchanged
    assert snowball("rutas excluidas", "es") == snowball("ruta excluida", "es") == ["rut", "exclu"]
    assert snowball("生命周期事件", "zh") == ["生命", "命周", "周期", "期事", "事件"]
    # Run together, CJK text is one unmatched term to the older analyzers: no term in common.
    question, page = "子应用会执行生命周期事件吗", "挂载的子应用不会执行主应用的生命周期事件"
    for name, shared in (("plain", False), ("english_stem", False), ("snowball", True)):
        analyze = analysis.analyzer(name)
        assert bool(set(analyze(question, "zh")) & set(analyze(page, "zh"))) is shared, name


def test_a_question_is_searched_in_its_language_and_the_source(babel: Harbor) -> None:
    reply = babel.service().answer(SPANISH)
    assert reply["guardrail"]["language"] == "es"
    assert reply["lanes"] == [
        {"language": "es", "lexical": True, "originals": False},
        {"language": "en", "lexical": False, "originals": True},
    ]
    assert _languages(reply) == {"es", "en"}, reply["retrieved"]
    documents = [r["document_id"] for r in reply["retrieved"]]
    # The lanes take turns: the Spanish page first, the original it was translated from second.
    assert documents[:2] == ["es/guide/openapi.md", "en/guide/openapi.md"], documents
    assert reply["retrieved"][1]["anchor"] == reply["retrieved"][0]["anchor"] == "hiding"
    # Its own language only: no English page; every language as one pool: the Chinese pages come too.
    own = babel.service().answer(SPANISH, variants={"language_route": "question"})
    assert _languages(own) == {"es"}
    pooled = babel.service().answer(SPANISH, variants={"language_route": "all"})
    assert "zh" in _languages(pooled)


def test_bm25_runs_in_the_question_lane_only(babel: Harbor) -> None:
    reply = babel.service().answer(SPANISH, variants={"retrieval": "bm25"})
    # Words do not match across languages: no BM25 in the English lane, whose only chunks are the
    # originals of the Spanish hits.
    english = [r for r in reply["retrieved"] if r["language"] == "en"]
    assert english and all(r["bm25_rank"] is None and r["dense_rank"] is None for r in english), english
    assert {r["document_id"] for r in english} <= {"en/guide/openapi.md", "en/guide/uploads.md"}
    ranked = [r for r in reply["retrieved"] if r["bm25_rank"] is not None]
    assert ranked and ranked[0]["document_id"] == "es/guide/openapi.md"


def test_a_chinese_question_finds_its_page_by_bm25(babel: Harbor) -> None:
    reply = babel.service().answer("挂载的子应用会执行主应用的生命周期事件吗？", variants={"retrieval": "bm25"})
    assert reply["guardrail"]["language"] == "zh"
    assert reply["retrieved"] and reply["retrieved"][0]["document_id"] == "zh/guide/lifespan.md", reply["retrieved"]


def test_coverage_knows_a_name_the_source_lane_holds(babel: Harbor) -> None:
    question = "¿Cuántas veces reintenta Tidewater una subida fallida?"  # the name is on an English page only
    both = babel.service().answer(question, variants={"coverage_names": "on"})
    assert both["coverage"]["covered"] is True, both["coverage"]
    own = babel.service().answer(question, variants={"language_route": "question", "coverage_names": "on"})
    assert own["status"] == "no_answer" and own["coverage"]["uncovered_names"] == ["Tidewater"], own["coverage"]
