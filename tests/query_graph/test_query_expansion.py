"""`query_expansion=passage` in the query graph with the packaged language model for real (tests/llm_gguf.py): the
model writes a passage, both retrievers search with it, and the answer is still the extractive generator's, quoted
and cited from the pages found. A model that is down leaves the question's own search: the reply is the one the
graph gives without expansion, never an error."""

from __future__ import annotations

from pathlib import Path

from tests.llm_gguf import GgufServer
from tests.llm_loopback import closed_port
from tests.query_graph.harbor import Harbor

QUESTION = "How do I get rid of stale stuff that piles up in the registry?"


def _ids(reply: dict[str, object]) -> list[str]:
    return [r["chunk_id"] for r in reply["retrieved"]]  # type: ignore[index,union-attr]


def test_the_written_passage_moves_the_search_and_the_answer_stays_a_quote(
    harbor: Harbor, gguf_llm: GgufServer
) -> None:
    model = {"llm_model": gguf_llm.model, "llm_api_base": gguf_llm.api_base, "llm_deadline_seconds": 300.0}
    plain = harbor.service(crag="off", **model).answer(QUESTION)
    expanded = harbor.service(crag="off", query_expansion="passage", **model).answer(QUESTION)
    assert expanded["variants"]["query_expansion"] == "passage" and plain["variants"]["query_expansion"] == "off"
    # The model was asked (a real call takes far longer than the empty variant) and the search read its passage.
    assert expanded["timings_ms"]["expansion_passage"] > 50 * plain["timings_ms"]["expansion_passage"]
    assert "search_embedding" in expanded["timings_ms"]
    before = {r["chunk_id"]: r["dense_score"] for r in plain["retrieved"]}
    after = {r["chunk_id"]: r["dense_score"] for r in expanded["retrieved"]}
    both = [key for key in before.keys() & after.keys() if before[key] is not None and after[key] is not None]
    assert both and all(abs(before[key] - after[key]) > 1e-4 for key in both)  # another vector searched
    assert expanded["generator"] == "extractive" and expanded["status"] in ("answered", "no_answer")
    if expanded["status"] == "answered":
        assert expanded["citations"] and {c["chunk_id"] for c in expanded["citations"]} <= set(_ids(expanded))


def test_a_model_that_is_down_leaves_the_question_s_own_search(harbor: Harbor, tmp_path: Path) -> None:
    down = {
        "llm_model": "openai/nothing-listens",
        "llm_api_base": f"http://127.0.0.1:{closed_port()}/v1",
        "llm_retries": 0,
        "llm_deadline_seconds": 5.0,
    }
    plain = harbor.service(crag="off").answer(QUESTION)
    reply = harbor.service(crag="off", query_expansion="passage", **down).answer(QUESTION)
    assert reply["status"] == plain["status"] and reply["answer"] == plain["answer"]
    assert _ids(reply) == _ids(plain) and "expansion_passage" in reply["timings_ms"]
