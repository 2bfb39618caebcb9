"""Multi-vector dense representation: a chunk is scored by its best passage, not only by its average.

One vector per chunk averages every paragraph of a 450-token chunk: a question about one sentence of
a long section (a settings-table row, a warning box) matches the chunk's mean weakly and ranks behind
shorter chunks that are about the question's topic in general. With `RAGLINE_DENSE_UNIT_TOKENS` > 0 a
build also embeds the chunk's units (its blocks packed up to that many tokens; a long table, code block
or paragraph cut by the chunker's own rules, so a table is cut by rows) and stores the chunk's vectors
as one multivector: [whole chunk, unit 1, unit 2, ...]. Qdrant's MaxSim comparator then scores the
chunk by max(cosine) over them, so the whole-chunk match is never lost and one matching paragraph is
enough. The chunk stays the unit of retrieval, citation and context: only its dense score changes.

Measured in evals/RESULTS.md ("Multi-vector dense search"): off by default, because the gains on the
documentation sets are within noise and 128-token units lower SciFact below its target.
"""

from __future__ import annotations

from pipelines.chunkers import TokenCounter, split_block, split_blocks
from pipelines.documents import Chunk


def trail(chunk: Chunk) -> str:
    """The page title and heading path, which every vector of a chunk is embedded with."""
    return " > ".join(dict.fromkeys([chunk.title, *chunk.heading_path]))


def with_trail(chunk: Chunk, text: str) -> str:
    head = trail(chunk)
    return f"{head}\n\n{text}" if head else text


def unit_texts(chunk: Chunk, count: TokenCounter, limit: int) -> list[str]:
    """The chunk's units, each with its trail; empty when the chunk is a single unit (its own vector
    already is that unit's vector)."""
    if limit <= 0:
        return []
    pieces = [piece for block in split_blocks(chunk.text.split("\n")) for piece in split_block(block, count, limit)]
    units: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and count("\n\n".join([*current, piece])) > limit:
            units.append("\n\n".join(current))
            current = []
        current.append(piece)
    if current:
        units.append("\n\n".join(current))
    if len(units) <= 1:
        return []
    return [with_trail(chunk, unit) for unit in units]
