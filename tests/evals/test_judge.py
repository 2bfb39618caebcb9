"""The judge path through litellm against a loopback OpenAI-compatible server (no hosted LLM here)."""

from __future__ import annotations

import pytest

from evals.answers import run_answers
from evals.golden import load_golden
from evals.judge import Judge, JudgeUnavailable
from pipelines.profiles import Stores
from pipelines.settings import Settings
from query_graph.service import QueryService
from tests.evals.judge_server import SLOW_SECONDS, judge_server
from tests.evals.test_eval_cli import GOLDEN

SOURCES = {
    "c1": "The dashboard listens on port 7420 by default. Set HARBOR_PORT to choose another port.",
    "c2": "Harbor keeps build logs for 14 days.",
}
ANSWER = "The dashboard listens on port 7420 by default. [C:c1] Harbor keeps build logs for 14 days. [C:c1][C:c2]"


def test_quotes_decide_support_not_the_judges_word() -> None:
    with judge_server() as url:
        honest = Judge("openai/judge", api_base=f"{url}/v1", api_key="loopback")
        judged = honest.judge("port and logs?", ANSWER, SOURCES, ["7420", "30 days"])
        liar = Judge("openai/judge", api_base=f"{url}/liar/v1", api_key="loopback")
        lied = liar.judge("port and logs?", ANSWER, SOURCES, [])
    assert judged.error is None
    assert judged.faithfulness == 1.0 and judged.citation_recall == 1.0
    # Statement 2 cites c1 and c2 but only c2 holds it: one of three citations is irrelevant (ALCE precision).
    assert abs(judged.citation_precision - 2 / 3) < 1e-9  # type: ignore[operator]
    assert judged.facts_correct == 0.5  # "7420" is stated, "30 days" is not
    # Invented quotes are not in the passages: nothing counts as supported, whatever the judge says.
    assert lied.faithfulness == 0.0 and lied.citation_recall == 0.0


def test_a_real_quote_that_does_not_say_the_claim_supports_nothing() -> None:
    with judge_server() as url:
        copier = Judge("openai/judge", api_base=f"{url}/copier/v1", api_key="loopback")
        copied = copier.judge("port and logs?", ANSWER, SOURCES, [])
    # Statement 1 cites c1 and the copier quotes c1's last sentence ("Set HARBOR_PORT ..."): in the
    # passage, but not the claim. Statement 2's first citation is c1 too. Nothing is supported.
    assert copied.claims[0].quote == "Set HARBOR_PORT to choose another port."
    assert copied.faithfulness == 0.0 and copied.citation_recall == 0.0


def test_unusable_or_unreachable_judge_is_reported_not_scored() -> None:
    with judge_server() as url:
        judged = Judge("openai/judge", api_base=f"{url}/garbage/v1", api_key="x").judge("q", ANSWER, SOURCES, [])
    assert judged.error is not None and "no JSON" in judged.error
    with pytest.raises(JudgeUnavailable):
        Judge("openai/judge", api_base="http://127.0.0.1:9/v1", api_key="x", timeout=2).judge("q", ANSWER, SOURCES, [])


def test_a_verdict_past_the_timeout_leaves_that_answer_unjudged_and_the_run_going() -> None:
    with judge_server() as url:
        slow = Judge("openai/judge", api_base=f"{url}/slow/v1", api_key="x", timeout=SLOW_SECONDS / 4)
        judged = slow.judge("q", ANSWER, SOURCES, [])
        # The same judge answers the next question in time (here: the same server, without the delay).
        slow.api_base = f"{url}/v1"
        after = slow.judge("port and logs?", ANSWER, SOURCES, [])
    assert judged.error is not None and "no verdict within" in judged.error  # left out of the averages
    assert after.error is None and after.faithfulness == 1.0


def test_answers_are_judged_and_the_control_run_is_unfaithful(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    questions = load_golden(GOLDEN)
    service = QueryService(settings, stores)
    index = service.active()[1]  # the service's own handle: a shard is opened by one handle at a time
    with judge_server() as url:
        run = run_answers(questions, service.answer, index, Judge("openai/judge", f"{url}/v1", "loopback"))
    overall = run.overall()
    assert overall["faithfulness"] is not None and overall["faithfulness"] >= 0.9
    assert overall["citation_recall"] is not None and overall["citation_precision"] is not None
    control = overall["judge"]["control"]
    assert control["answers"] >= 2 and control["unfaithful_as_expected"] and control["faithfulness"] < 0.5
