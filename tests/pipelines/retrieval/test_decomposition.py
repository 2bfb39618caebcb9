"""`sub_queries=model`'s reply reading: the model's JSON list of queries becomes the asks a retrieval searches, and
anything else (prose, a cut-off object, one query, the question repeated) leaves the question searched whole."""

from __future__ import annotations

import json
from typing import Any

from pipelines.retrieval.decomposition import (
    MOST_QUERIES,
    decomposition_messages,
    queries_schema,
    read_queries,
    written_queries,
)

QUESTION = "Which glaze turns green, and how hot is cone 10?"


def test_two_queries_or_more_are_read_in_order_stripped_and_each_once() -> None:
    reply = json.dumps({"queries": [" celadon glaze colour ", "cone 10 temperature", "Celadon  glaze colour"]})
    assert read_queries(reply, QUESTION) == ["celadon glaze colour", "cone 10 temperature"]


def test_at_most_three_queries_are_kept() -> None:
    reply = json.dumps({"queries": [f"query {n}" for n in range(5)]})
    assert read_queries(reply, QUESTION) == [f"query {n}" for n in range(MOST_QUERIES)]


def test_anything_but_two_distinct_queries_leaves_the_whole_question() -> None:
    for reply in (
        "Search for the glaze, then for the cone.",  # prose: a server that ignored the schema
        '{"queries": ["celadon glaze colour", "cone 10',  # cut off by the token limit
        json.dumps({"queries": []}),  # a question of one thing
        json.dumps({"queries": ["celadon glaze colour"]}),
        json.dumps({"queries": [QUESTION.lower(), "  "]}),  # the question again, and an empty one
        json.dumps({"queries": "celadon glaze colour"}),
        json.dumps(["celadon glaze colour", "cone 10 temperature"]),
        json.dumps({"queries": [1, 2]}),
    ):
        assert read_queries(reply, QUESTION) == [], reply


def test_the_model_is_asked_under_the_schema_for_the_question() -> None:
    asked: list[tuple[list[dict[str, str]], dict[str, Any]]] = []

    def write(messages: list[dict[str, str]], form: dict[str, Any]) -> str:
        asked.append((messages, form))
        return json.dumps({"queries": ["celadon glaze colour", "cone 10 temperature"]})

    assert written_queries(f" {QUESTION} ", write) == ["celadon glaze colour", "cone 10 temperature"]
    messages, form = asked[0]
    assert messages == decomposition_messages(QUESTION) and messages[1]["content"].endswith(f"Question: {QUESTION}")
    assert form == {"type": "json_object", "schema": queries_schema()}
    written_queries(QUESTION, write, "json_schema")
    assert asked[1][1]["json_schema"]["schema"] == queries_schema()
    assert asked[1][1]["json_schema"]["name"] == "search_queries"
