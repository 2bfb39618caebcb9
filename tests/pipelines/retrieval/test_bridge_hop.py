"""The bridge hop (pipelines/retrieval/bridge_hop.py) on the real in-memory BM25 engine: a question that asks two
things gets the chunk of another page that names the identifier its first hit's section is about."""

from __future__ import annotations

from pipelines.documents import Chunk
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.retrieval.bridge_hop import bridges, second_hop

CHUNKS = {
    # name: (page, heading, text)
    "terminal": (
        "config/advanced.md",
        "The `[session_server]` section",
        "To use interactive web terminals for jobs, add the [session_server] section with listen_address.",
    ),
    "docker": (
        "config/advanced.md",
        "The `[runners.docker]` section",
        "Settings of the Docker executor: image, volumes and privileged mode.",
    ),
    "install": (
        "install/docker.md",
        "Start the container",
        "If you use session_server, expose port 8093 by adding -p 8093:8093 to your docker run command.",
    ),
    "upgrade": (
        "install/upgrade.md",
        "Upgrade the container",
        "Stop the container with docker stop, pull the new image and docker run it again.",
    ),
    "faq": ("faq.md", "Web terminals", "Web terminals do not work with the shell executor on Windows."),
}
QUESTION = (
    "I run the runner in Docker and want interactive web terminals for jobs. "
    "Which config.toml section do I need, and what do I add to docker run?"
)


def chunk(name: str) -> Chunk:
    page, heading, text = CHUNKS[name]
    return Chunk(name, page, name, [heading], "", f"file:///{page}", "heading", "en", 0, text)


def engine() -> MemoryBM25:
    return MemoryBM25.build([chunk(name) for name in CHUNKS], "snowball")


def test_bridges_are_the_code_spans_of_the_hits_sections_the_question_does_not_name() -> None:
    hits = [chunk("terminal"), chunk("docker"), chunk("faq")]
    assert bridges(QUESTION, hits) == ["session_server", "runners.docker"]
    assert bridges("How do I set [session_server] and what else?", hits) == ["runners.docker"]
    assert bridges(QUESTION, [chunk("faq")]) == []


def test_second_hop_finds_the_other_page_that_names_the_bridge() -> None:
    bm25 = engine()
    plain = [h.chunk.chunk_id for h in bm25.search(QUESTION, 3, "en")]
    assert "install" not in plain  # the question alone does not reach the install page's chunk
    hop = second_hop(QUESTION, [chunk("terminal"), chunk("faq")], bm25, "en", sources=3, limit=10)
    assert hop is not None
    assert (hop.chunk.chunk_id, hop.bridge, hop.bridge_of) == ("install", "session_server", "terminal")


def test_no_second_hop_without_two_asks_a_bridge_or_another_page() -> None:
    bm25 = engine()
    one_ask = "I run the runner in Docker. Which config.toml section do I need for web terminals?"
    assert second_hop(one_ask, [chunk("terminal")], bm25, "en", 3, 10) is None
    assert second_hop(QUESTION, [chunk("faq"), chunk("upgrade")], bm25, "en", 3, 10) is None  # no code span
    # The page that names the bridge is already read: nothing to add.
    assert second_hop(QUESTION, [chunk("terminal"), chunk("install")], bm25, "en", 3, 10) is None
    # A bridge named only by a hit beyond `sources` does not count.
    assert second_hop(QUESTION, [chunk("faq"), chunk("terminal")], bm25, "en", 1, 10) is None
