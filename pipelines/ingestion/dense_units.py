"""Multi-vector dense representation: a chunk is scored by its best passage, not only by its average.

One vector per chunk averages every paragraph of a 450-token chunk: a question about one sentence of
a long section (a settings-table row, a warning box) matches the chunk's mean weakly and ranks behind
shorter chunks that are about the question's topic in general. With `RAGLINE_DENSE_UNIT_TOKENS` > 0 a
build also embeds the chunk's units (its blocks packed up to that many tokens; a long table, code block
or paragraph cut by the chunker's own rules, so a table is cut by rows) and stores the chunk's vectors
as one multivector: [whole chunk, unit 1, unit 2, ...]. Qdrant's MaxSim comparator then scores the
chunk by max(cosine) over them, so the whole-chunk match is never lost and one matching paragraph is
enough. The chunk stays the unit of retrieval, citation and context: only its dense score changes.

`RAGLINE_DENSE_UNIT_SCOPE=tables` (the default, with 128 tokens) cuts only a chunk's tables into units:
a settings table's rows are unrelated records, prose is one topic. Units of all text lowered SciFact, which
has no tables (docs/decisions/dense-units.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.documents import Chunk
from pipelines.ingestion.chunkers import TokenCounter, split_block, split_blocks


def trail(chunk: Chunk) -> str:
    """The page title and heading path, which every vector of a chunk is embedded with."""
    return " > ".join(dict.fromkeys([chunk.title, *chunk.heading_path]))


def with_trail(chunk: Chunk, text: str) -> str:
    head = trail(chunk)
    return f"{head}\n\n{text}" if head else text


SCOPES = ("all", "tables")


def describe(tokens: int, scope: str = "all") -> str:
    """The units setting as one label: "off", "128" (all text) or "128 tables"."""
    if tokens <= 0:
        return "off"
    return str(tokens) if scope == "all" else f"{tokens} {scope}"


def described(chunk_settings: Mapping[str, Any]) -> str:
    """The label of an index version's units setting (versions from before the scope used all text)."""
    return describe(int(chunk_settings.get("dense_unit_tokens", 0)), str(chunk_settings.get("dense_unit_scope", "all")))


def is_table(block: str) -> bool:
    """A Markdown table block: rows of cells, the header's separator row among them."""
    return block.lstrip().startswith("|") and "\n" in block


def unit_texts(chunk: Chunk, count: TokenCounter, limit: int, scope: str = "all") -> list[str]:
    """The chunk's units, each with its trail; empty when the chunk is a single unit (its own vector
    already is that unit's vector). `scope="tables"`: only the chunk's tables are cut into units (rows
    under their header); its prose is left to the chunk's own vector."""
    if limit <= 0:
        return []
    if scope not in SCOPES:
        raise ValueError(f"unknown dense unit scope {scope!r}; known: {', '.join(SCOPES)}")
    blocks = split_blocks(chunk.text.split("\n"))
    # The prose a tables-scope cut leaves out: without any (headings aside), one unit is the chunk itself.
    prose = [b for b in blocks if not is_table(b) and not b.lstrip().startswith("#")]
    if scope == "tables":
        blocks = [block for block in blocks if is_table(block)]
    pieces = [piece for block in blocks for piece in split_block(block, count, limit)]
    units: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and count("\n\n".join([*current, piece])) > limit:
            units.append("\n\n".join(current))
            current = []
        current.append(piece)
    if current:
        units.append("\n\n".join(current))
    if len(units) <= 1 and (scope == "all" or not prose):
        return []
    return [with_trail(chunk, unit) for unit in units]


def embedding_text(chunk: Chunk) -> str:
    """What the dense model reads: the page title and heading path give a chunk its context."""
    return with_trail(chunk, chunk.text)
