"""Citation verification: the lexical support score, and the `off` / `lexical` / `strict` / `llm` variants in the
graph."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.answering.verification import check_citations, support_score
from query_graph.nodes.generation import Draft
from query_graph.service import QueryFailed
from tests.llm_gguf import GgufServer
from tests.llm_loopback import closed_port, loopback_llm
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"
PASSAGE = "The dashboard listens on port 7420 by default. Set `HARBOR_PORT` to choose another port."


def test_support_score_asks_whether_the_text_says_it() -> None:
    assert support_score("The dashboard listens on port 7420 [C:x].", PASSAGE) == 1.0
    assert support_score("Set HARBOR_PORT to choose another port.", PASSAGE) == 1.0
    wrong_number = support_score("The dashboard listens on port 8080.", PASSAGE)
    related_only = support_score("The dashboard shows build logs for 14 days.", PASSAGE)
    assert wrong_number < 0.6 and related_only < 0.6
    [check] = check_citations("The dashboard listens on port 8080.", [("c1", PASSAGE)], 0.6)
    assert not check.supported and "content words" in check.reason


def test_a_fact_told_of_another_command_is_not_supported() -> None:
    # What the packaged 1.5B model wrote when asked which port `harbor sync` uses: the passage's port,
    # given to a command the passage never names. Numbers and identifiers must be in the passage as written.
    claim = "The `harbor sync` command uses port 7420 by default."
    assert support_score(claim, PASSAGE) < 0.6
    assert support_score("Set `HARBOR_PORT` to choose another port.", PASSAGE) == 1.0
    # Words joined by a slash or hyphen are prose, written either way; a name with "_" or "." must be whole.
    css = "Self-hosting the JavaScript and CSS is useful offline."
    assert support_score("Self-hosting the JavaScript/CSS is useful offline.", css) == 1.0
    assert support_score("Self-hosting the static_files is useful offline.", css) < 0.6
    # An identifier counts where it is written inside a longer one (a path inside a URL).
    assert (
        support_score("The docs are at /subapi/docs.", "Open http://127.0.0.1:8000/subapi/docs to see the docs.") == 1.0
    )


def test_the_same_words_with_the_opposite_meaning_are_not_supported() -> None:
    # What the packaged model wrote about GitLab Runner's `concurrent = 0` (its page says 0 is forbidden and
    # the runner exits); reduced here to its shape: every word is in the passage, the negation is not.
    passage = "A value of `0` is forbidden. If you use this value, the runner process exits with a critical error."
    assert support_score("A value of `0` is not forbidden.", passage) < 0.6
    assert support_score("A value of `0` is forbidden.", passage) == 1.0
    # Either way round, and with the negation written as a contraction.
    negative = "The runner doesn't reload `listen_address` without a restart. Other settings reload every 3 seconds."
    assert support_score("The runner reloads `listen_address` without a restart.", negative) < 0.6
    assert support_score("The runner does not reload `listen_address` without a restart.", negative) == 1.0
    # The sentence that holds the claim decides, not a negation elsewhere in the passage.
    assert support_score("Other settings reload every 3 seconds.", negative) == 1.0
    assert support_score("Other settings never reload every 3 seconds.", negative) < 0.6
    # True sentences the model wrote, which a whole-sentence comparison of negations got wrong: the negation
    # in a condition, a negative answer to a yes/no question, a negation the claim does not touch.
    metrics = "Set `listen_address` for the metrics server. If the listen address does not contain a port, it defaults to 9252."
    assert (
        support_score("The metrics server uses port 9252 if the listen_address does not contain a port.", metrics)
        >= 0.6
    )
    reload = (
        "To change the runner, edit `config.toml`. The runner does not require a restart when you change most options."
    )
    assert support_score("No, you do not have to restart the runner after editing `config.toml`.", reload) >= 0.6
    charts = (
        "The chart doesn't have the same version number as GitLab. | Chart version | GitLab version | 9.4.0 | 18.4.0 |"
    )
    assert support_score("For GitLab 18.4.0, use the chart version 9.4.0.", charts) >= 0.6


def test_support_of_a_chinese_sentence_is_read_in_character_pairs() -> None:
    # Written without spaces: a paraphrase is one run of characters that never occurs whole in the passage.
    passage = "仪表板默认监听端口 7420。设置 HARBOR_PORT 可以换一个端口。"
    assert support_score("仪表板默认监听这个端口。", passage) >= 0.6
    assert support_score("构建日志保存十四天之后被删除。", passage) < 0.6


def _draft(harbor: Harbor) -> tuple[Draft, str, str]:
    """A draft with one supported citation and one that names a real, supplied, but unrelated chunk."""
    retrieved = harbor.service().answer(PORT_Q, variants={"verify": "off"})["retrieved"]
    ports = next(r["chunk_id"] for r in retrieved if r["anchor"] == "ports")
    other = next(r["chunk_id"] for r in retrieved if r["document_id"] != "guide/config.md")
    text = f"The dashboard listens on port 7420 [C:{ports}]. Harbor keeps build logs for 30 days [C:{other}]."
    return Draft(text=text, generator="test"), ports, other


def _answer(harbor: Harbor, draft: Draft, variants: dict[str, str], **settings: Any) -> dict[str, Any]:
    return harbor.service(**settings).answer(PORT_Q, overrides={"draft_answer": draft}, variants=variants)


def test_lexical_removes_the_unsupported_citation_and_says_why(harbor: Harbor) -> None:
    draft, ports, other = _draft(harbor)
    reply = _answer(harbor, draft, {"verify": "lexical"})
    assert reply["answer"] == f"The dashboard listens on port 7420 [C:{ports}]."
    assert [c["chunk_id"] for c in reply["citations"]] == [ports]
    [problem] = reply["verification"]["unsupported"]
    assert problem["chunk_id"] == other and problem["action"] == "withheld" and "30 days" in problem["sentence"]
    assert problem["score"] < 0.6 and reply["verification"]["checked"] == 2


def test_a_sentence_cited_to_the_wrong_passage_is_withheld_never_recited(harbor: Harbor) -> None:
    # True of the docs, but cited to a passage that does not say it: withheld, not cited to the right one
    # afterwards, and the reply says so.
    _, ports, other = _draft(harbor)
    draft = Draft(text=f"Set `HARBOR_PORT` to choose another port [C:{other}].", generator="test")
    for variants in ({"verify": "lexical"}, {}):
        reply = _answer(harbor, draft, variants)
        assert reply["status"] == "no_answer" and reply["citations"] == []
        [problem] = reply["verification"]["unsupported"]
        assert problem["chunk_id"] == other and problem["action"] == "withheld" and "recited_to" not in problem
        assert reply["verification"]["withheld_sentences"] == 1
        assert reply["note"] is not None and "1 sentence of the answer withheld" in reply["note"]
    # One good sentence and one withheld: the good one is released, the count says one.
    mixed = Draft(
        text=f"The dashboard listens on port 7420 [C:{ports}]. Harbor keeps build logs for 30 days [C:{other}].",
        generator="test",
    )
    reply = _answer(harbor, mixed, {})
    assert reply["answer"] == f"The dashboard listens on port 7420 [C:{ports}]."
    assert reply["verification"]["withheld_sentences"] == 1
    with loopback_llm() as judge:
        judged = _answer(harbor, draft, {"verify": "llm"}, llm_model="openai/judge", llm_api_base=judge.api_base)
    assert judged["status"] == "no_answer" and judged["verification"]["unsupported"][0]["action"] == "withheld"


def test_strict_is_the_default_and_rejects_what_the_lexical_share_lets_through(harbor: Harbor) -> None:
    # A code span the passage only has as a plain word, and a changed port: `lexical` at 0.6 keeps the first.
    _, ports, _ = _draft(harbor)
    text = f"The dashboard listens on port 7420 [C:{ports}]. Set `--port` to choose another port [C:{ports}]."
    lexical = _answer(harbor, Draft(text=text, generator="test"), {"verify": "lexical"})
    assert "--port" in lexical["answer"] and lexical["verification"]["unsupported"] == []
    reply = _answer(harbor, Draft(text=text, generator="test"), {})
    assert reply["verification"]["mode"] == "strict"
    assert reply["answer"] == f"The dashboard listens on port 7420 [C:{ports}]."
    [problem] = reply["verification"]["unsupported"]
    assert problem["chunk_id"] == ports and "as written" in problem["reason"] and problem["score"] == 0.0
    changed = Draft(text=f"The dashboard listens on port 7421 [C:{ports}].", generator="test")
    assert _answer(harbor, changed, {})["status"] == "no_answer"


def test_flag_keeps_the_sentence_and_reports_it(harbor: Harbor) -> None:
    draft, _, other = _draft(harbor)
    reply = _answer(harbor, draft, {"verify": "lexical"}, verify_action="flag")
    assert "30 days" in reply["answer"]
    flagged = reply["verification"]["unsupported"][0]
    assert flagged["action"] == "flagged" and flagged["chunk_id"] == other


def test_off_checks_nothing(harbor: Harbor) -> None:
    draft, _, _ = _draft(harbor)
    reply = _answer(harbor, draft, {"verify": "off"})
    assert "30 days" in reply["answer"] and reply["verification"]["unsupported"] == []


def test_llm_judge_removes_what_the_passage_does_not_say(harbor: Harbor) -> None:
    draft, ports, other = _draft(harbor)
    with loopback_llm() as judge:
        reply = _answer(harbor, draft, {"verify": "llm"}, llm_model="openai/judge", llm_api_base=judge.api_base)
        assert judge.requests == 2  # one yes/no question per (sentence, cited chunk) pair
    assert reply["verification"]["mode"] == "llm"
    assert [p["chunk_id"] for p in reply["verification"]["unsupported"]] == [other]
    assert [c["chunk_id"] for c in reply["citations"]] == [ports]


def test_llm_score_asks_the_model_only_of_a_reworded_claim(harbor: Harbor) -> None:
    # A quoted sentence passes `strict` and a changed number fails its gates: neither is shown to the model.
    _, ports, _ = _draft(harbor)
    text = f"The dashboard listens on port 7420 [C:{ports}]. The dashboard listens on port 7421 [C:{ports}]."
    with loopback_llm() as judge:
        settings = {"llm_model": "openai/judge", "llm_api_base": judge.api_base, "llm_retries": 0}
        reply = _answer(harbor, Draft(text=text, generator="test"), {"verify": "llm_score"}, **settings)
        assert judge.requests == 0
        assert reply["answer"] == f"The dashboard listens on port 7420 [C:{ports}]."
        assert (
            reply["verification"]["mode"] == "llm_score" and "7421" in reply["verification"]["unsupported"][0]["reason"]
        )
        # A reworded claim is, and a provider that gives no log-probabilities fails the request closed.
        reworded = Draft(
            text=f"Unless configured otherwise, the dashboard listens on port 7420 [C:{ports}].", generator="t"
        )
        with pytest.raises(QueryFailed) as info:
            _answer(harbor, reworded, {"verify": "llm_score"}, **settings)
        assert judge.requests == 1 and judge.bodies[-1]["logprobs"] is True
    assert info.value.status == 503 and info.value.code == "verification_unavailable"


def test_llm_score_with_the_packaged_model_tells_a_rewording_from_a_reversal(
    harbor: Harbor, gguf_llm: GgufServer
) -> None:
    # Both fail `strict` for words the passage lacks and hold most of its words: the model decides.
    _, ports, _ = _draft(harbor)
    settings = {"llm_model": gguf_llm.model, "llm_api_base": gguf_llm.api_base, "llm_deadline_seconds": 300.0}
    settings["verify_action"] = "flag"  # a judged claim is listed with its P(yes) whichever way it goes
    reworded = f"Unless configured otherwise, the dashboard listens on port 7420 [C:{ports}]."
    reversed_ = f"The dashboard refuses connections on port 7420 by default [C:{ports}]."
    replies = [
        _answer(harbor, Draft(text=text, generator="t"), {"verify": "llm_score"}, **settings)
        for text in (reworded, reversed_)
    ]
    judged = [r["verification"]["unsupported"] for r in replies]
    p_yes = [entries[0]["score"] if entries else None for entries in judged]
    assert judged[1] and judged[1][0]["reason"].startswith("judge: P(yes)"), judged
    assert p_yes[0] is None or p_yes[0] > p_yes[1], p_yes  # the rewording kept, or at least rated higher


def test_llm_judge_down_fails_closed(harbor: Harbor) -> None:
    draft, _, _ = _draft(harbor)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(QueryFailed) as info:
        _answer(harbor, draft, {"verify": "llm"}, llm_api_base=dead, llm_retries=0)
    assert info.value.status == 503 and info.value.code == "verification_unavailable"
