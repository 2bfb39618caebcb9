"""The front stages run from plans worked out once (query_graph/front.py `StagePlan`): each plan gives
what `driver.execute` gives, checks its inputs as Hamilton does, and no front node runs twice."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hamilton import driver
from hamilton.lifecycle import NodeExecutionHook

from pipelines.text.language import SpokenLanguage
from query_graph.driver import MODULES
from query_graph.front import FRONT_STAGES, StagePlan
from query_graph.port_inputs import PortAwareInputCheck
from query_graph.service import QueryService
from query_graph.timing import NodeTimer, current_timings
from tests.query_graph.front_fixtures import (  # noqa: F401 (fixtures)
    FrontEnv,
    ServiceFactory,
    front_env,
    make_service,
)

QUESTION = "Which port does the harbor dashboard listen on?"


class CountRuns(NodeExecutionHook):
    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

    def run_before_node_execution(self, *, node_name: str, **future_kwargs: Any) -> None:
        self.runs[node_name] += 1

    def run_after_node_execution(self, **future_kwargs: Any) -> None:
        pass


def counting_driver(service: QueryService) -> tuple[driver.Driver, CountRuns]:
    """The service's graph with its own adapters plus one that counts the runs of every node."""
    counter = CountRuns()
    builder = driver.Builder().with_modules(*MODULES).with_config(dict(service.back.defaults))
    return builder.with_adapters(NodeTimer(), PortAwareInputCheck(), counter).build(), counter


def inputs_for(service: QueryService, question: str, spoken: SpokenLanguage | None = None) -> dict[str, Any]:
    version, index = service.active()
    return service.graph_inputs(question, None, dict(service.back.defaults), version, index, spoken)


@pytest.mark.parametrize("spoken", [None, SpokenLanguage("en", 0.99)])
def test_each_stage_plan_gives_what_driver_execute_gives(
    make_service: ServiceFactory,  # noqa: F811
    spoken: SpokenLanguage | None,
) -> None:
    service = make_service(cache_ttl_seconds=120)
    service.answer(QUESTION)  # the exact cache holds it: stage 2 reads a real entry
    graph = service.back.driver(dict(service.back.defaults))
    inputs = inputs_for(service, QUESTION, spoken)
    given: dict[str, Any] = {}
    token = current_timings.set({})
    try:
        for stage in FRONT_STAGES:
            plan = StagePlan.build(graph, stage, inputs, given)
            assert plan is not None
            planned = plan.run(inputs, given)
            executed = graph.execute(list(stage), inputs=inputs, overrides=given)
            for name in stage:
                if name == "query_embedding":
                    assert (planned[name] == executed[name]).all()
                else:
                    assert planned[name] == executed[name], name
            given = {**given, **planned}
    finally:
        current_timings.reset(token)
    assert given["exact_cache_lookup"].status == "hit"
    # Intermediate nodes come back too, so the next stage takes them as given instead of recomputing.
    assert {"guardrail_language", "normalized_question"} <= set(given)


def test_plans_check_inputs_as_hamilton_does(make_service: ServiceFactory) -> None:  # noqa: F811
    service = make_service()
    graph = service.back.driver(dict(service.back.defaults))
    good = inputs_for(service, QUESTION)
    plan = StagePlan.build(graph, FRONT_STAGES[0], good, {})
    assert plan is not None and plan.by_type
    token = current_timings.set({})
    try:
        plan.run(good, {})  # passes, and is remembered for these types
        for bad in ({**good, "max_question_chars": "many"}, {**good, "spoken_language": "en"}):
            with pytest.raises(ValueError, match="Type requirement mismatch"):
                graph.execute(list(FRONT_STAGES[0]), inputs=bad)
            with pytest.raises(ValueError, match="Type requirement mismatch"):
                plan.run(bad, {})
        missing = {k: v for k, v in good.items() if k != "clarify_vague"}
        with pytest.raises(ValueError, match="Required input clarify_vague not provided"):
            plan.run(missing, {})
    finally:
        current_timings.reset(token)


def test_no_front_node_runs_twice(make_service: ServiceFactory) -> None:  # noqa: F811
    service = make_service(cache_ttl_seconds=120)
    graph, counter = counting_driver(service)
    token = current_timings.set({})
    try:
        missed = service.front.run(graph, inputs_for(service, "How long does harbor keep build logs?"), None)
        assert missed.early is None and missed.cache_status == "miss"  # all four stages ran
        assert counter.runs and max(counter.runs.values()) == 1, counter.runs
        assert {"guardrail_language", "exact_cache_lookup", "query_embedding"} <= set(counter.runs)
        counter.runs.clear()
        service.answer(QUESTION)
        hit = service.front.run(graph, inputs_for(service, QUESTION), None)
        assert hit.early is not None and hit.cache_status == "hit"
        assert max(counter.runs.values()) == 1 and "query_embedding" not in counter.runs, counter.runs
    finally:
        current_timings.reset(token)
