"""The litellm generator and the `llm` verifier against a real language model: the packaged
Qwen2.5-Coder-1.5B GGUF behind llama-cpp-python's OpenAI-compatible server on loopback (tests/llm_gguf.py).

The model's words are not asserted, only what the pipeline guarantees whatever a model writes: every
released sentence carries the citations the model wrote for it (a JSON schema constrains the reply to
sentences with passage numbers; none is attached afterwards), each of a supplied passage that supports
it, or the reply says it has no answer, or that it is the extractive answer and why. Temperature 0 keeps a run repeatable on one machine; each test asks the model one to three
things, about ten seconds each on 2 cores.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pipelines.answering.citations import markers, split_sentences, strip_markers
from query_graph.nodes.generation import Draft
from query_graph.streaming import stream_answer
from tests.llm_gguf import GgufServer
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"
UNANSWERED_Q = "Which port does harbor sync use to upload artefacts?"
RETENTION_Q = "How long does harbor keep build logs?"
LITELLM = {"generator": "litellm"}


def _settings(llm: GgufServer, deadline: float = 300.0) -> dict[str, Any]:
    # 2 cores read a prompt at about 100 tokens a second: the default 30 s deadline is for hosted models.
    # llama-cpp-python's server reads the reply's schema as `json_object` with a `schema`, as `generator=local` sets.
    return {
        "llm_model": llm.model,
        "llm_api_base": llm.api_base,
        "llm_deadline_seconds": deadline,
        "llm_structured_output": "json_object",
    }


def _released_sentences_are_cited_and_supported(reply: dict[str, Any]) -> None:
    supplied = {r["chunk_id"] for r in reply["retrieved"]}
    cited = {c["chunk_id"] for c in reply["citations"]}
    assert cited and cited <= supplied
    released = split_sentences(reply["answer"])
    for sentence in released:
        assert markers(sentence) and set(markers(sentence)) <= cited, sentence
    assert reply["verification"]["attached_citations"] == 0  # the model's own citations, or the extractive ones
    assert not any(p.get("action") == "recited" for p in reply["verification"]["unsupported"])
    # What verification found unsupported may be reported, never released with that citation.
    for failed in reply["verification"]["unsupported"]:
        claim = strip_markers(failed["sentence"])
        assert not any(strip_markers(s) == claim and failed["chunk_id"] in markers(s) for s in released), failed


def test_the_model_answers_with_validated_citations(harbor: Harbor, gguf_llm: GgufServer) -> None:
    reply = harbor.service(**_settings(gguf_llm)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and reply["generator"] == "litellm", reply
    assert "7420" in reply["answer"] and reply["fallback"] is None, reply  # the model's answer, not the fallback
    assert reply["provider"]["role"] == "primary" and not reply["provider"]["fallback_used"]
    _released_sentences_are_cited_and_supported(reply)
    assert any(c["document_id"] == "guide/config.md" for c in reply["citations"])
    assert reply["timings_ms"]["draft_answer"] > 0


def test_the_model_streams_validated_sentences_before_the_final_reply(harbor: Harbor, gguf_llm: GgufServer) -> None:
    events = list(stream_answer(harbor.service(**_settings(gguf_llm)), PORT_Q, LITELLM))
    *sentences, final = events
    assert sentences and all(e["type"] == "sentence" and e["chunk_ids"] for e in sentences)
    assert final["type"] == "final" and final["status"] == "answered"
    assert " ".join(e["text"] for e in sentences) == final["answer"]
    _released_sentences_are_cited_and_supported(final)


def test_two_questions_at_once_are_both_answered(harbor: Harbor, gguf_llm: GgufServer) -> None:
    # llama-cpp-python's server ends a streaming answer when another request arrives, unless started with
    # --interrupt_requests False (scripts/local-llm-serve.sh): one of two users then got 503
    # generation_unavailable ("Stream ended before a finish_reason was received").
    service = harbor.service(**_settings(gguf_llm, deadline=300.0))  # the second waits for the first
    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda q: service.answer(q, variants=LITELLM), [PORT_Q, RETENTION_Q]))
    for reply in replies:
        assert reply["status"] == "answered", reply
        assert [a["outcome"] for a in reply["provider"]["attempts"]] == ["ok"], reply["provider"]
        _released_sentences_are_cited_and_supported(reply)


def test_the_model_chooses_sentences_that_are_quoted_as_the_page_writes_them(
    harbor: Harbor, gguf_llm: GgufServer
) -> None:
    """`llm_answer=quote`: the model's reply is sentence numbers; the answer is those sentences, verbatim."""
    reply = harbor.service(**_settings(gguf_llm)).answer(PORT_Q, variants={**LITELLM, "llm_answer": "quote"})
    assert reply["status"] == "answered" and reply["fallback"] is None, reply
    assert reply["sentence_ranker"] == "llm" and "7420" in reply["answer"], reply["answer"]
    _released_sentences_are_cited_and_supported(reply)
    assert reply["verification"]["unsupported"] == []
    pages = " ".join(" ".join(p.read_text().split()) for p in Path(str(harbor.settings.source)).rglob("*.md"))
    for sentence in split_sentences(reply["answer"]):
        assert len(markers(sentence)) == 1
        assert " ".join(strip_markers(sentence).split()).rstrip(".") in pages, sentence  # a quote, not the model's


def test_the_model_picks_the_first_sentence_of_the_extractive_answer(harbor: Harbor, gguf_llm: GgufServer) -> None:
    """`llm_answer=choose`: the model's reply is one number among the sentence ranker's best; the answer is the
    extractive answer's quotes with its pick first."""
    reply = harbor.service(**_settings(gguf_llm)).answer(PORT_Q, variants={**LITELLM, "llm_answer": "choose"})
    assert reply["status"] == "answered" and reply["fallback"] is None, reply
    assert reply["sentence_ranker"] == "llm_choice" and "7420" in reply["answer"], reply["answer"]
    _released_sentences_are_cited_and_supported(reply)
    assert reply["verification"]["unsupported"] == []
    source = Path(str(harbor.settings.source))
    pages = " ".join(" ".join(p.read_text().replace("`", "").split()) for p in source.rglob("*.md"))  # as quoted
    for sentence in split_sentences(reply["answer"]):
        assert " ".join(strip_markers(sentence).split()).rstrip(".") in pages, sentence  # a quote, not the model's


def test_a_question_the_passages_do_not_answer_releases_no_uncited_claim(harbor: Harbor, gguf_llm: GgufServer) -> None:
    reply = harbor.service(**_settings(gguf_llm)).answer(UNANSWERED_Q, variants=LITELLM)
    print(reply["verification"])
    assert reply["timings_ms"]["draft_answer"] > 100, "the question reached the model"
    # The passages give the dashboard's port, not one for harbor sync. This model says "The `harbor sync`
    # command uses port 7420 by default", citing the ports passage: the command's name is not in it.
    assert not ("sync" in reply["answer"] and "7420" in reply["answer"]), reply["answer"]
    if reply["status"] == "answered":  # only what a supplied passage supports may be said
        _released_sentences_are_cited_and_supported(reply)
    else:
        assert reply["status"] == "no_answer" and reply["citations"] == []


def test_the_model_as_judge_removes_a_citation_its_passage_does_not_support(
    harbor: Harbor, gguf_llm: GgufServer
) -> None:
    retrieved = harbor.service().answer(PORT_Q, variants={"verify": "off"})["retrieved"]
    ports = next(r["chunk_id"] for r in retrieved if r["anchor"] == "ports")
    other = next(r["chunk_id"] for r in retrieved if r["document_id"] != "guide/config.md")
    text = f"The dashboard listens on port 7420 [C:{ports}]. Harbor keeps build logs for 30 days [C:{other}]."
    reply = harbor.service(**_settings(gguf_llm)).answer(
        PORT_Q, overrides={"draft_answer": Draft(text=text, generator="test")}, variants={"verify": "llm"}
    )
    assert reply["verification"]["mode"] == "llm"
    assert [p["chunk_id"] for p in reply["verification"]["unsupported"]] == [other]
    assert [c["chunk_id"] for c in reply["citations"]] == [ports]
