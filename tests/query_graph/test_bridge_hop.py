"""The bridge hop in the query graph, on a real index: a question that asks two things gets, right after
the hit whose section names an identifier, the chunk of another page that names it too; the variant
`bridge_hop=off` and a question of one ask search as before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.schemas import QueryReply
from tests.query_graph.harbor import Harbor, harbor_index

PAGES = {
    "config/advanced.md": """# Advanced configuration

The agent reads `agent.toml`. Each section below configures one part of it.

## The `[metrics_server]` section

To use live build dashboards for jobs, add the `[metrics_server]` section to `agent.toml` and set
`bind_address` to the address the dashboard server listens on.

## The `[agents.cache]` section

The cache section stores job caches in S3 or on a shared volume between jobs.
""",
    "install/docker.md": """# Run the agent in a container

## Start the container

Mount a volume for the configuration so it survives a restart of the container.
If you use a [`metrics_server`](../config/advanced.md), expose port 9464 by adding `-p 9464:9464` to
your `docker run` commands.
""",
    "executors/docker.md": """# The Docker executor

The Docker executor runs each job in a Docker container. In `agent.toml`, jobs that run in Docker use
the image you name; the agent starts the job's container with the equivalent of `docker run`.
""",
    "register.md": """# Register an agent

Register the agent in Docker with `docker run --rm -it example/agent register`; the command
writes the agent's section to `agent.toml` so jobs can run.
""",
    "faq.md": """# Frequently asked questions

## Live dashboards on Windows

Live build dashboards do not work for jobs of the shell executor on Windows.
""",
}
QUESTION = (
    "I run the agent in Docker and want live build dashboards for jobs. "
    "Which agent.toml section do I need, and what do I add to docker run?"
)


@pytest.fixture(scope="module")
def agent_docs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("agent"), request, PAGES) as index:
        yield index


def test_a_two_ask_question_gets_the_page_that_names_the_first_answer(agent_docs: Harbor) -> None:
    service = agent_docs.service(crag="off")
    off = service.answer(QUESTION, top_k=3, variants={"bridge_hop": "off"})
    assert "install/docker.md" not in [r["document_id"] for r in off["retrieved"]]  # one hop misses it
    assert not any("bridge" in r for r in off["retrieved"])

    on = service.answer(QUESTION, top_k=3, variants={"bridge_hop": "on"})
    assert on["variants"]["bridge_hop"] == "on" and "bridged_candidates" in on["timings_ms"]
    retrieved = on["retrieved"]
    assert len(retrieved) == 3 and [r["fused_rank"] for r in retrieved] == [1, 2, 3]
    hop = next(i for i, r in enumerate(retrieved) if "bridge" in r)
    assert retrieved[hop]["document_id"] == "install/docker.md"
    assert retrieved[hop]["bridge"] == "metrics_server"
    source = retrieved[hop - 1]  # the hop follows the hit whose section named the bridge
    assert source["chunk_id"] == retrieved[hop]["bridge_of"]
    assert source["document_id"] == "config/advanced.md" and "metrics_server" in source["heading_path"][-1]
    # The hits before the hop keep their places; the one after moves down.
    first = [r["chunk_id"] for r in off["retrieved"]]
    assert [r["chunk_id"] for r in retrieved[:hop]] == first[:hop]
    assert [r["chunk_id"] for r in retrieved[hop + 1 :]] == first[hop : len(retrieved) - 1]
    # When the source is the last hit the generator reads, there is no place after it: no hop, no error.
    short = service.answer(QUESTION, top_k=hop, variants={"bridge_hop": "on"})
    assert [r["chunk_id"] for r in short["retrieved"]] == first[:hop]
    assert not any("bridge" in r for r in short["retrieved"])
    # The HTTP reply's model keeps the hop's fields (the server answers with it).
    sent = QueryReply.model_validate(on).model_dump()["retrieved"][hop]
    assert (sent["bridge"], sent["bridge_of"]) == ("metrics_server", source["chunk_id"])


def test_a_question_of_one_ask_has_no_second_hop(agent_docs: Harbor) -> None:
    service = agent_docs.service(crag="off")
    question = "I run the agent in Docker. Which agent.toml section do I need for live build dashboards?"
    on = service.answer(question, top_k=3, variants={"bridge_hop": "on"})
    off = service.answer(question, top_k=3, variants={"bridge_hop": "off"})
    assert [r["chunk_id"] for r in on["retrieved"]] == [r["chunk_id"] for r in off["retrieved"]]
    assert not any("bridge" in r for r in on["retrieved"])
