"""The litellm generator through the whole query graph, against a real OpenAI-compatible server on
loopback (tests/llm_loopback.py: real HTTP and SSE; JSON replies from a deterministic procedure, not a
model). Cited sentences, withheld ones, replies the model wrote badly, the provider's fallback, clarify,
no_answer, outages."""

from __future__ import annotations

import json
import re

import pytest

from pipelines.adapters.llm_harness import response_format
from pipelines.answering.citations import split_sentences, strip_markers
from pipelines.answering.litellm_generator import (
    MalformedReply,
    ModelSentence,
    Passage,
    ReplyReader,
    answer_schema,
    build_choose_messages,
    build_quote_messages,
    choose_schema,
    cited_text,
    fit_passages,
    quotables,
    quote_schema,
    read_choose_reply,
    read_quote_reply,
)
from query_graph.service import QueryFailed
from tests.llm_loopback import closed_port, loopback_llm
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"
LITELLM = {"generator": "litellm"}


def llm_settings(api_base: str, **extra: object) -> dict[str, object]:
    return {"llm_model": "openai/loopback", "llm_api_base": api_base, "llm_backoff_seconds": 0.01, **extra}


def test_the_reply_is_read_sentence_by_sentence_as_it_streams() -> None:
    reply = json.dumps(
        {
            "kind": "answer",
            "sentences": [
                {"text": 'The port is 7420 [1], "}" included.', "sources": [1]},
                {"text": "Set HARBOR_PORT to change it.", "sources": [2, 1, 2]},
            ],
        }
    )
    reader, seen = ReplyReader(), []
    for i, char in enumerate(reply):
        for sentence in reader.feed(char):
            seen.append((i, sentence))
    assert [s for _, s in seen] == [
        ModelSentence('The port is 7420, "}" included.', (1,)),  # an inline citation is the sources' job
        ModelSentence("Set HARBOR_PORT to change it.", (2, 1)),
    ]
    # Each read the moment its object closes, before the rest of the reply has arrived.
    assert [i for i, _ in seen] == [reply.index("[1]}") + 3, reply.index("2]}") + 2]
    assert reader.kind == "answer" and reader.finish()["kind"] == "answer"
    cut = ReplyReader()
    cut.feed(reply[:-20])
    with pytest.raises(MalformedReply):
        cut.finish()


def test_the_schema_names_only_the_passages_given_and_the_citations_are_theirs() -> None:
    schema = answer_schema(3)
    sources = schema["properties"]["sentences"]["items"]["properties"]["sources"]
    assert sources["items"]["enum"] == [1, 2, 3] and sources["minItems"] == 1
    assert list(schema["properties"]) == ["kind", "sentences"]
    assert response_format(schema, "json_object") == {"type": "json_object", "schema": schema}
    assert response_format(schema, "json_schema")["json_schema"]["schema"] == schema
    passages = [Passage("aa-0", "Install", "Harbor runs on Linux."), Passage("bb-1", "Ports", "Port 7420.")]
    assert cited_text(ModelSentence("The dashboard listens on port 7420.", (2,)), passages) == (
        "The dashboard listens on port 7420 [C:bb-1].",
        ["bb-1"],
    )
    assert cited_text(ModelSentence("Port 7420.", (7,)), passages) is None  # a number that was not given


def test_passages_are_cut_to_the_budget_at_a_strip() -> None:
    long = Passage("aa-0", "A", "First strip here.\n\n" + "x" * 300)
    assert fit_passages([long, Passage("bb-1", "B", "y" * 100)], 250)[0].text == "First strip here."
    assert [p.chunk_id for p in fit_passages([Passage("a", "", "x" * 100)] * 3, 250)] == ["a", "a"]


def test_the_quote_form_numbers_each_sentence_once_and_reads_back_only_numbers_given() -> None:
    passages = [
        Passage("aa-0", "Ports", "The dashboard listens on port 7420. Change it with:\n\n```\nharbor --port 8000\n```"),
        Passage(
            "bb-1",
            "Logs",
            "The dashboard listens on port 7420. Logs are kept for 14 days:\n\n- build logs\n- audit logs",
        ),
    ]
    units = quotables(passages)
    # The second passage's copy of the first sentence is not numbered again; a list's items come with the
    # sentence that announces them, not as sentences of their own.
    assert [(u.passage, u.text) for u in units] == [
        (0, "The dashboard listens on port 7420."),
        (0, "Change it with:"),
        (1, "Logs are kept for 14 days:"),
    ]
    assert units[1].block == "```\nharbor --port 8000\n```" and units[2].block and "audit logs" in units[2].block
    user = build_quote_messages("Which port?", passages, units)[1]["content"]
    assert "# Ports\n[1] The dashboard listens on port 7420.\n[2] Change it with:\n```" in user
    assert "# Logs\n[3] Logs are kept for 14 days:" in user and user.endswith("Question: Which port?")
    schema = quote_schema(len(units), 2)
    assert schema["properties"]["sentences"]["items"]["enum"] == [1, 2, 3]
    assert schema["properties"]["sentences"]["maxItems"] == 2 and list(schema["properties"]) == ["kind", "sentences"]
    assert read_quote_reply('{"kind": "answer", "sentences": [2, 1, 2]}', 3) == ("answer", [2, 1])
    assert read_quote_reply('{"kind": "no_answer", "sentences": []}', 3) == ("no_answer", [])
    for bad in (
        '{"kind": "answer", "sentences": [4]}',
        '{"kind": "clarify"}',
        '{"kind": "answer", "sentences": [true]}',
        "{",
    ):
        with pytest.raises(MalformedReply):
            read_quote_reply(bad, 3)


def test_the_choose_form_numbers_the_rankers_sentences_and_reads_back_one_given_number() -> None:
    messages = build_choose_messages("Which port?", ["The dashboard listens on 7420.", "Logs are kept."])
    assert "[1] The dashboard listens on 7420.\n[2] Logs are kept." in messages[-1]["content"]
    assert choose_schema(2)["properties"]["sentence"]["enum"] == [1, 2]
    assert read_choose_reply('{"sentence": 2}', 2) == 1
    for bad in ('{"sentence": 3}', '{"sentence": true}', '{"sentences": [1]}', "Sentence 1.", "[1]"):
        with pytest.raises(MalformedReply):
            read_choose_reply(bad, 2)
    # `choose_or_decline`: 0 says no sentence answers; only that form offers it.
    assert choose_schema(2, decline=True)["properties"]["sentence"]["enum"] == [0, 1, 2]
    assert read_choose_reply('{"sentence": 0}', 2, decline=True) == -1
    assert '{"sentence": 0}' in build_choose_messages("Which port?", ["a.", "b."], decline=True)[-1]["content"]
    with pytest.raises(MalformedReply):
        read_choose_reply('{"sentence": 0}', 2)


def test_choose_puts_the_models_pick_first_and_quotes_the_extractive_answers_sentences(harbor: Harbor) -> None:
    """`llm_answer=choose`: the model reads the sentence ranker's best sentences and names one; the answer is the
    extractive answer with that sentence first, every sentence a quote cited as always."""
    choose = {**LITELLM, "llm_answer": "choose"}
    with loopback_llm() as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=choose)
        [body] = llm.bodies
    listed = re.findall(r"^\[(\d+)\] (.*)$", body["messages"][-1]["content"], re.MULTILINE)
    assert 2 <= len(listed) <= 6 and body["response_format"]["type"] == "json_schema"
    assert reply["status"] == "answered" and reply["fallback"] is None and reply["sentence_ranker"] == "llm_choice"
    assert "7420" in reply["answer"] and reply["verification"]["unsupported"] == []
    extractive = harbor.service().answer(PORT_Q)
    first = split_sentences(strip_markers(reply["answer"]))[0]
    assert any(first.rstrip(".") in text for _, text in listed)
    # Every sentence of the extractive answer is said too: the pick leads, nothing is dropped.
    for sentence in split_sentences(strip_markers(extractive["answer"])):
        assert sentence in strip_markers(reply["answer"]), sentence


def test_choose_or_decline_answers_as_choose_or_declines_when_the_model_says_none_answers(harbor: Harbor) -> None:
    """`llm_answer=choose_or_decline`: a number picks the first sentence as `choose` does; 0 makes the reply
    `no_answer`, with no quote and no citation."""
    decline = {**LITELLM, "llm_answer": "choose_or_decline"}
    with loopback_llm() as llm:
        chosen = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=decline)
        plain = harbor.service(**llm_settings(llm.api_base)).answer(
            PORT_Q, variants={**LITELLM, "llm_answer": "choose"}
        )
    assert chosen["status"] == "answered" and chosen["sentence_ranker"] == "llm_choice"
    assert chosen["answer"] == plain["answer"]
    with loopback_llm(mode="no_answer") as llm:
        declined = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=decline)
        [body] = llm.bodies
    assert '{"sentence": 0}' in body["messages"][-1]["content"]
    assert declined["status"] == "no_answer" and declined["citations"] == [] and declined["fallback"] is None


def test_a_choice_the_model_wrote_badly_leaves_the_extractive_answer_and_says_so(harbor: Harbor) -> None:
    with loopback_llm(mode="prose") as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(
            PORT_Q, variants={**LITELLM, "llm_answer": "choose"}
        )
    assert reply["status"] == "answered" and reply["fallback"]["generator"] == "extractive"
    assert "not the JSON asked for" in reply["fallback"]["reason"]
    assert reply["answer"] == harbor.service().answer(PORT_Q)["answer"]


def test_litellm_answer_cites_what_the_model_wrote_from_the_strips(harbor: Harbor) -> None:
    with loopback_llm() as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["generator"] == "litellm" and reply["provider"]["role"] == "primary"
    assert not reply["provider"]["fallback_used"] and reply["fallback"] is None and reply["note"] is None
    assert reply["citations"][0]["document_id"] == "guide/config.md"
    assert reply["verification"]["attached_citations"] == 0 and reply["verification"]["withheld_sentences"] == 0
    assert 0 < reply["timings_ms"]["first_sentence"] <= reply["timings_ms"]["total"]
    body = next(b for b in llm.bodies if "response_format" in b)
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["sentences"]["items"]
    assert enum["properties"]["sources"]["items"]["enum"][0] == 1
    prompt = body["messages"][-1]["content"]
    assert "[1] " in prompt and "[C:" not in prompt  # numbered passages: the model never sees a chunk id
    assert len(prompt.split("Question:")[0]) <= 1600 + 200  # the strips, within the budget (titles aside)


def test_a_sentence_no_cited_passage_supports_is_withheld_and_counted(harbor: Harbor) -> None:
    with loopback_llm(mode="padded") as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert "Rust" not in reply["answer"] and reply["verification"]["withheld_sentences"] == 1
    assert reply["verification"]["withheld"][0]["sentence"].startswith("Harbor is written in Rust")
    assert reply["note"].startswith("1 sentence of the model's answer withheld") and reply["fallback"] is None


def test_a_sentence_cited_to_the_wrong_passage_is_withheld_not_recited(harbor: Harbor) -> None:
    # The true sentence cites a passage that does not say it: it is not moved to the passage that does.
    # With nothing left of the model's reply, the extractive answer is given, and the reply says so.
    with loopback_llm(mode="wrong_source") as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["verification"]["withheld_sentences"] == 1
    assert not any(p.get("action") == "recited" for p in reply["verification"]["unsupported"])
    assert reply["fallback"]["generator"] == "extractive"
    assert "supported by the passage it cites" in reply["fallback"]["reason"]
    assert reply["status"] == "answered" and "7420" in reply["answer"] and "extractive answer" in reply["note"]


@pytest.mark.parametrize("mode", ["prose", "forged"])
def test_a_reply_the_model_wrote_badly_falls_back_to_the_extractive_answer(harbor: Harbor, mode: str) -> None:
    """Prose from a server that ignored the schema, or a passage number it was not given: no 5xx."""
    with loopback_llm(mode=mode) as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["fallback"]["generator"] == "extractive" and reply["note"]
    extractive = harbor.service().answer(PORT_Q)
    assert reply["answer"] == extractive["answer"]


def test_the_extractive_fallback_answers_with_the_variants_the_request_chose(harbor: Harbor) -> None:
    chosen = {"answer_span": "sentence"}  # the sentence alone, not the one after it
    with loopback_llm(mode="prose") as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants={**LITELLM, **chosen})
    assert reply["fallback"]["generator"] == "extractive"
    service = harbor.service()
    assert reply["answer"] == service.answer(PORT_Q, variants=chosen)["answer"] != service.answer(PORT_Q)["answer"]


def test_fallback_provider_is_reported_in_the_reply(harbor: Harbor) -> None:
    with loopback_llm() as backup:
        settings = llm_settings(
            f"http://127.0.0.1:{closed_port()}/v1",
            llm_fallback_model="openai/backup",
            llm_fallback_api_base=backup.api_base,
        )
        reply = harbor.service(**settings).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered"
    assert reply["provider"]["role"] == "fallback" and reply["provider"]["fallback_used"]
    assert reply["provider"]["model"] == "openai/backup"


def test_generator_down_after_retries_is_503(harbor: Harbor) -> None:
    settings = llm_settings(f"http://127.0.0.1:{closed_port()}/v1", llm_retries=1)
    with pytest.raises(QueryFailed) as info:
        harbor.service(**settings).answer(PORT_Q, variants=LITELLM)
    assert info.value.status == 503 and info.value.code == "generation_unavailable"


def test_model_clarify_and_no_answer_replies(harbor: Harbor) -> None:
    with loopback_llm(mode="clarify") as llm:
        clarify = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert clarify["status"] == "clarify" and clarify["answer"].startswith("Which part of harbor")
    assert clarify["citations"] == []
    with loopback_llm(mode="no_answer") as llm:
        none = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert none["status"] == "no_answer" and none["citations"] == []


def test_crag_rewrites_through_the_llm_when_it_generates(harbor: Harbor) -> None:
    with loopback_llm() as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(
            "What is the boiling point of mercury in kelvin?", variants=LITELLM
        )
    assert reply["crag"]["rewrite"] == "llm" and reply["crag"]["rewritten_query"] == "boiling kelvin mercury point"
    assert reply["status"] == "no_answer"


def test_a_stream_that_breaks_after_released_sentences_keeps_them_and_says_so(harbor: Harbor) -> None:
    # A stream has shown those sentences already: the reply keeps them rather than ending in a 503.
    with loopback_llm(mode="long") as llm:
        llm.script = ["break"]
        reply = harbor.service(**llm_settings(llm.api_base, llm_retries=0)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"] and reply["fallback"] is None
    assert "broke off" in reply["note"] and "stopped before the end" in reply["note"]
