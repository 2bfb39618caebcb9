"""The bridge hop (pipelines/retrieval/bridge_hop.py) on the real in-memory BM25 engine: a question that asks two
things gets the chunk of another page that names the identifier its first hit's section is about."""

from __future__ import annotations

from pipelines.documents import Chunk
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.retrieval.bridge_hop import bridges, second_hop

CHUNKS = {
    # name: (page, heading, text)
    "dashboard": (
        "config/advanced.md",
        "The `[metrics_server]` section",
        "To use live build dashboards for jobs, add the [metrics_server] section with bind_address.",
    ),
    "docker": (
        "config/advanced.md",
        "The `[agents.docker]` section",
        "Settings of the Docker executor: image, volumes and privileged mode.",
    ),
    "install": (
        "install/docker.md",
        "Start the container",
        "If you use metrics_server, expose port 9464 by adding -p 9464:9464 to your docker run command.",
    ),
    "upgrade": (
        "install/upgrade.md",
        "Upgrade the container",
        "Stop the container with docker stop, pull the new image and docker run it again.",
    ),
    "faq": ("faq.md", "Live dashboards", "Live dashboards do not work with the shell executor on Windows."),
}
QUESTION = (
    "I run the agent in Docker and want live build dashboards for jobs. "
    "Which agent.toml section do I need, and what do I add to docker run?"
)


def chunk(name: str) -> Chunk:
    page, heading, text = CHUNKS[name]
    return Chunk(name, page, name, [heading], "", f"file:///{page}", "heading", "en", 0, text)


def engine() -> MemoryBM25:
    return MemoryBM25.build([chunk(name) for name in CHUNKS], "snowball")


def test_bridges_are_the_code_spans_of_the_hits_sections_the_question_does_not_name() -> None:
    hits = [chunk("dashboard"), chunk("docker"), chunk("faq")]
    assert bridges(QUESTION, hits) == ["metrics_server", "agents.docker"]
    assert bridges("How do I set [metrics_server] and what else?", hits) == ["agents.docker"]
    assert bridges(QUESTION, [chunk("faq")]) == []


def test_second_hop_finds_the_other_page_that_names_the_bridge() -> None:
    bm25 = engine()
    plain = [h.chunk.chunk_id for h in bm25.search(QUESTION, 3, "en")]
    assert "install" not in plain  # the question alone does not reach the install page's chunk
    hop = second_hop(QUESTION, [chunk("dashboard"), chunk("faq")], bm25, "en", sources=3, limit=10)
    assert hop is not None
    assert (hop.chunk.chunk_id, hop.bridge, hop.bridge_of) == ("install", "metrics_server", "dashboard")


def test_no_second_hop_without_two_asks_a_bridge_or_another_page() -> None:
    bm25 = engine()
    one_ask = "I run the agent in Docker. Which agent.toml section do I need for live dashboards?"
    assert second_hop(one_ask, [chunk("dashboard")], bm25, "en", 3, 10) is None
    assert second_hop(QUESTION, [chunk("faq"), chunk("upgrade")], bm25, "en", 3, 10) is None  # no code span
    # The page that names the bridge is already read: nothing to add.
    assert second_hop(QUESTION, [chunk("dashboard"), chunk("install")], bm25, "en", 3, 10) is None
    # A bridge named only by a hit beyond `sources` does not count.
    assert second_hop(QUESTION, [chunk("faq"), chunk("dashboard")], bm25, "en", 1, 10) is None
