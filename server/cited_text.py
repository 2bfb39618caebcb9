"""An answer as a chat client shows it: the `[C:<chunk_id>]` markers as numbered references, [1], [2],
in the order the answer first cites them, and the list of those references with their links at the end.
The OpenAI-compatible route and the MCP server's `ask_docs` both answer in it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.answering.citations import MARKER


class Numbering:
    """Chunk ids numbered in the order they are first cited; a sentence's markers become `[n]`."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def number(self, chunk_id: str) -> int:
        return self.numbers.setdefault(chunk_id, len(self.numbers) + 1)

    def sentence(self, text: str) -> str:
        return MARKER.sub(lambda m: f"[{self.number(m.group(1))}]", text)

    def references(self, citations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The reply's citations in reference order, each with its `number` (a citation no sentence
        numbered yet gets the next one)."""
        numbered = [{"number": self.number(c["chunk_id"]), **c} for c in citations]
        return sorted(numbered, key=lambda c: c["number"])


def sources(references: list[dict[str, Any]]) -> str:
    """The list of links that ends a cited answer; empty without references."""
    if not references:
        return ""
    lines = [f"[{r['number']}] {r['title']}: {r['source_uri']}" for r in references]
    return "\n\nSources:\n" + "\n".join(lines)


def cited_answer(reply: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(the answer with numbered references and its list of sources, the numbered citations). A reply
    that is not `answered` (no_answer, clarify, refused) is its text alone."""
    numbering = Numbering()
    answer = reply["answer"]
    if reply.get("status") != "answered":
        return answer, []
    text = numbering.sentence(answer)
    references = numbering.references(reply.get("citations", []))
    return text + sources(references), references
