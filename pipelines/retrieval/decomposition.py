"""Sub-queries the language model writes (`sub_queries=model`, docs/decisions/multi-page.md).

A question whose answer spans two pages is searched as one text, and the part whose words weigh most fills the
list with its own page. `sub_queries=asks` splits the question by its wording (pipelines/text/asks.py), which
finds few such questions and leaves each ask without what the rest of the question names ("that", "it"). Here the
model rewrites the question as one to three self-contained search queries (least-to-most prompting and
self-ask decompose questions the same way: Zhou et al. 2023, Press et al. 2023), under a JSON schema so the reply
is a list and nothing else. The retrieval then searches each as `sub_queries=asks` searches its asks
(pipelines/retrieval/retriever.py `RetrievalPlan.asked`): the whole question's list and each query's take turns.

A query may be wrong: it only adds hits, and every answer still quotes and cites the pages found. A model that
fails, times out or replies with something other than the list leaves the question's own search.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pipelines.adapters.llm_harness import LLMHarness, StructuredOutput, response_format

MOST_QUERIES = 3
QUERY_TOKENS = 120  # three short queries in their JSON object

DECOMPOSE_SYSTEM = "You turn questions about software documentation into search queries. Reply with JSON only."
# Two invented examples (no golden question): a question of two things, and one of one thing, which the model would
# otherwise rewrite as paraphrases of itself.
DECOMPOSE_ASK = (
    "Does the question ask about two or more different things? If it does, write one short search query for each "
    "thing, each complete on its own (name its subject in full, never 'it' or 'that'), at most "
    f"{MOST_QUERIES}. If it asks about one thing, reply with an empty list.\n\n"
    "Question: How do I set the request timeout, and where are the logs written?\n"
    '{{"queries": ["set the request timeout", "where the logs are written"]}}\n\n'
    "Question: How do I set the request timeout?\n"
    '{{"queries": []}}\n\n'
    "Question: {question}"
)


def queries_schema() -> dict[str, Any]:
    """The reply's JSON schema: an object whose `queries` is a list of at most `MOST_QUERIES` strings (empty: the
    question asks one thing)."""
    return {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": MOST_QUERIES,
            }
        },
        "required": ["queries"],
        "additionalProperties": False,
    }


def decomposition_messages(question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": DECOMPOSE_SYSTEM},
        {"role": "user", "content": DECOMPOSE_ASK.format(question=question.strip())},
    ]


def read_queries(text: str, question: str) -> list[str]:
    """The sub-queries of a reply, in order: stripped, each once, at most `MOST_QUERIES`; `[]` when the reply is
    not the object asked for or holds fewer than two distinct queries (a question of one thing: searched whole)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []
    items = value.get("queries") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return []
    queries: list[str] = []
    seen = {" ".join(question.lower().split())}
    for item in items:
        if not isinstance(item, str) or not item.strip():
            continue
        key = " ".join(item.lower().split())
        if key in seen:
            continue
        seen.add(key)
        queries.append(item.strip())
    queries = queries[:MOST_QUERIES]
    return queries if len(queries) >= 2 else []


# Writes a reply for messages under a response format (a model's reply); raises when the model is unavailable.
Writer = Callable[[list[dict[str, str]], dict[str, Any]], str]


def written_queries(question: str, write: Writer, form: StructuredOutput = "json_object") -> list[str]:
    """The model's sub-queries of the question; `[]` for a question of one thing or a reply that is not a list."""
    reply = write(decomposition_messages(question), response_format(queries_schema(), form, "search_queries"))
    return read_queries(reply, question)


def model_queries(question: str, harness: LLMHarness, form: StructuredOutput = "json_object") -> list[str]:
    """The sub-queries the harness's model writes (`GenerationUnavailable` when it cannot)."""

    def write(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        return "".join(harness.stream(messages, QUERY_TOKENS, response_format=schema))

    return written_queries(question, write, form)
