"""Two retrieval mechanisms for questions whose answer spans two pages, on a real index: `sub_queries=asks`
searches a question of two asks ask by ask and lets the lists take turns; `passages_per_page` keeps at most
that many hits of one page before other pages' hits. `sub_queries=model` searches the queries the language model writes as asks. All are off by default; either way the served path
and the smoke check rank alike (tests/query_graph/test_served_retrieval.py holds that check)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from pipelines.adapters.llm_harness import LLMHarness
from pipelines.retrieval.decomposition import model_queries
from pipelines.settings import Settings
from pipelines.text.asks import split_asks
from query_graph.service import QueryService
from tests.llm_gguf import GgufServer
from tests.llm_loopback import closed_port
from tests.query_graph.harbor import Harbor, harbor_index, retrieved_pages
from tests.query_graph.test_served_retrieval import ranked_alike

# A corpus where one page says much about one ask and another page says one thing about the other.
PAGES = {
    "glaze/recipes.md": """# Glaze recipes

## Celadon glaze

A celadon glaze is feldspar, silica and a little iron oxide; the glaze turns green in reduction.

## Tenmoku glaze

A tenmoku glaze holds more iron oxide than celadon, and in reduction the glaze turns a deep brown.

## Shino glaze

A shino glaze is mostly feldspar with a trace of iron oxide, and reduction turns the glaze orange.

## Iron red glaze

An iron red glaze needs so much iron oxide that reduction turns the glaze red where it is thick.
""",
    "kiln/firing.md": """# Firing the kiln

## Cone temperatures

The kiln should climb no faster than 150 °C an hour near the end, and cone 10 is reached at about 1300 °C
in a large gas kiln after twelve hours of firing, which is hot enough for stoneware.
""",
    "studio/rules.md": """# Studio rules

## Cleaning

Wipe the wheel after each session and keep the clay bins closed.
""",
}
QUESTION = (
    "Which iron oxide glaze turns green in reduction, which turns brown, which turns orange, and how hot is cone 10?"
)


@pytest.fixture(scope="module")
def pottery(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("pottery"), request, PAGES) as index:
        yield index


def _ids(service: QueryService, question: str, variant: str) -> list[str]:
    """The chunks retrieved for `question` (three places) with `sub_queries=variant`."""
    reply = service.answer(question, top_k=3, variants={"sub_queries": variant})
    return [r["chunk_id"] for r in reply["retrieved"]]


def _turns(lists: list[list[str]]) -> list[str]:
    """The lists taking turns, first hits first, each chunk once (`RetrievalPlan.asked`'s order)."""
    return list(dict.fromkeys(hit for rank in range(3) for hits in lists for hit in hits[rank : rank + 1]))


def test_a_two_ask_question_searched_per_ask_takes_turns_between_the_lists(pottery: Harbor) -> None:
    service = pottery.service(crag="off", distinct_passages="off")  # the turns alone, no passage passed over

    asks = split_asks(QUESTION)
    assert len(asks) == 2
    lists = [_ids(service, QUESTION, "off")] + [_ids(service, ask, "off") for ask in asks]
    turns = _turns(lists)
    asked = service.answer(QUESTION, top_k=3, variants={"sub_queries": "asks"})
    assert asked["variants"]["sub_queries"] == "asks" and "asked_candidates" in asked["timings_ms"]
    assert [r["chunk_id"] for r in asked["retrieved"]] == turns[:3]
    assert [r["fused_rank"] for r in asked["retrieved"]] == [1, 2, 3]
    # Each ask's first hit is in: the second ask's page is read whatever the whole question ranks.
    assert lists[1][0] in turns[:3] and lists[2][0] in turns[:3]
    assert "kiln/firing.md" in retrieved_pages(asked)
    # A question of one ask is searched once, as before.
    one = "Which iron oxide glaze turns green in reduction?"
    assert _ids(service, one, "asks") == _ids(service, one, "off")


# Two things asked in one clause: the wording rule (`asks`) reads one ask, a model reads two.
ONE_CLAUSE = "Which glaze turns green in reduction, and the temperature of cone 10?"


def test_the_model_s_queries_are_searched_as_asks_and_take_turns(pottery: Harbor, gguf_llm: GgufServer) -> None:
    model = {
        "llm_model": gguf_llm.model,
        "llm_api_base": gguf_llm.api_base,
        "llm_deadline_seconds": 300.0,
        "llm_structured_output": "json_object",  # the form llama-cpp-python's server reads
    }
    service = pottery.service(crag="off", distinct_passages="off", **model)

    assert split_asks(ONE_CLAUSE) == [ONE_CLAUSE]  # the wording rule reads one ask
    queries = model_queries(ONE_CLAUSE, LLMHarness.from_settings(Settings(**model)))  # temperature 0: the graph's
    assert 2 <= len(queries) <= 3, queries
    lists = [_ids(service, ONE_CLAUSE, "off")] + [_ids(service, query, "off") for query in queries]
    turns = _turns(lists)
    asked = service.answer(ONE_CLAUSE, top_k=3, variants={"sub_queries": "model"})
    assert asked["variants"]["sub_queries"] == "model"
    assert [r["chunk_id"] for r in asked["retrieved"]] == turns[:3]
    assert "kiln/firing.md" in retrieved_pages(asked)
    # A question of one thing gets no queries: its one search, as with the variant off.
    one = "How hot is cone 10?"
    assert _ids(service, one, "model") == _ids(service, one, "off")


def test_a_model_that_is_down_leaves_the_whole_question_s_list(pottery: Harbor) -> None:
    down = {"llm_model": "openai/nothing-listens", "llm_api_base": f"http://127.0.0.1:{closed_port()}/v1"}
    service = pottery.service(crag="off", llm_retries=0, llm_deadline_seconds=5.0, **down)
    plain = service.answer(ONE_CLAUSE, top_k=3, variants={"sub_queries": "off"})
    reply = service.answer(ONE_CLAUSE, top_k=3, variants={"sub_queries": "model"})
    assert reply["variants"]["sub_queries"] == "model" and reply["status"] == plain["status"]
    assert [r["chunk_id"] for r in reply["retrieved"]] == [r["chunk_id"] for r in plain["retrieved"]]


@pytest.mark.parametrize("cap", [1, 2])
def test_passages_per_page_lets_other_pages_in_and_fills_the_rest_from_the_waiting_hits(
    pottery: Harbor, cap: int
) -> None:
    every = pottery.service(crag="off", distinct_passages="off", top_k=9).answer(QUESTION)["retrieved"]
    assert len(every) == 9  # the whole corpus, in fused order
    page = {r["chunk_id"]: r["document_id"] for r in every}
    first, waiting, seen = [], [], Counter[str]()
    for r in every:
        (first if seen[r["document_id"]] < cap else waiting).append(r["chunk_id"])
        seen[r["document_id"]] += 1

    free = pottery.service(crag="off", distinct_passages="off", top_k=4).answer(QUESTION)["retrieved"]
    capped = pottery.service(crag="off", distinct_passages="off", top_k=4, passages_per_page=cap).answer(QUESTION)
    ids = [r["chunk_id"] for r in capped["retrieved"]]
    assert ids == (first + waiting)[:4]
    assert max(Counter(page[i] for i in ids[: len(first[:4])]).values()) <= cap
    # On this corpus one page holds most of the best hits: the limit lets more pages into the first three.
    assert len({page[i] for i in ids[:3]}) > len({r["document_id"] for r in free[:3]})


@pytest.mark.parametrize("updates", [{"sub_queries": "asks"}, {"passages_per_page": 1}], ids=["asks", "per_page"])
def test_the_smoke_check_ranks_what_the_served_path_ranks(pottery: Harbor, updates: dict[str, object]) -> None:
    ranked_alike(pottery, (QUESTION,), top_k=3, **updates)
