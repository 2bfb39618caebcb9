"""A second retrieval hop for questions that ask two things, through a bridge identifier.

A question that asks two things ("which section configures a feature, and what do I add to the command
that starts it?") can have its two answers on two pages. The first hop (the hybrid retrieval) finds the
section that names the thing (an identifier such as `[server]`); the page that says how to start it
names that thing too, but shares few words with the question, and the hybrid lists rank it far down. Multi-hop retrieval (bridge-entity retrieval, as in HotpotQA systems)
searches again with what the first hop found: here the code identifiers in the headings of the top hits.

The rule, with nothing fitted to a question set:
- only a question that asks two things (pipelines/text/asks.py: two question sentences, or "..., and
  what/which/how ...", English patterns only);
- bridges: the code spans in the last heading of the first `sources` hits (the section each hit is),
  those the question does not already name;
- one BM25 search with the question's terms and the bridges' terms, all at weight 1;
- its first chunk that names a bridge in its own text, from a page none of the hits the generator reads
  (the request's top_k) is on, goes right after the hit whose heading named the bridge: the second
  answer beside the first. The hits after it move down one place.
A question of one ask, or whose top hits name no identifier, is searched exactly as without the hop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.documents import Chunk
from pipelines.golden_sets import normalise  # the golden sets' matching rule: case, ` and * and spacing ignored
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.text.analysis import analyzer
from pipelines.text.asks import asks_two

_CODE_SPAN = re.compile(r"`([^`]+)`")
_WRAPPERS = "[]()<>{} "


def bridges(question: str, hits: Sequence[Chunk]) -> list[str]:
    """The identifiers the hits' own sections are about (code spans in each hit's last heading, without
    brackets or call parentheses), in the hits' order, except those the question names already."""
    return list(_bridge_sources(question, hits))


def _bridge_sources(question: str, hits: Sequence[Chunk]) -> dict[str, str]:
    """Each bridge (in the hits' order) -> the chunk id of the first hit whose heading names it."""
    asked = normalise(question)
    found: dict[str, str] = {}
    for chunk in hits:
        heading = chunk.heading_path[-1] if chunk.heading_path else ""
        for span in _CODE_SPAN.findall(heading):
            name = span.strip(_WRAPPERS)
            if len(name) >= 3 and normalise(name) not in asked and name not in found:
                found[name] = chunk.chunk_id
    return found


@dataclass(frozen=True)
class Hop:
    chunk: Chunk
    bridge: str  # the identifier it was found by
    bridge_of: str  # the chunk id of the hit whose heading named it


def second_hop(
    question: str,
    top: Sequence[Chunk],
    engine: MemoryBM25,
    language: str | None,
    sources: int,
    limit: int,
) -> Hop | None:
    """The chunk of another page that the question's second ask may need (None: not a two-ask question,
    no bridge, or no chunk that names one). `top` is the list the generator would read, best first."""
    if not top or not asks_two(question):
        return None
    names = _bridge_sources(question, top[:sources])
    if not names:
        return None
    analyse = analyzer(engine.analyzer_name)
    weights = dict.fromkeys(analyse(question, language), 1.0)
    weights.update(dict.fromkeys(analyse(" ".join(names), language), 1.0))
    pages = {chunk.document_id for chunk in top}
    for hit in engine.search_weighted(weights, limit):
        if hit.chunk.document_id in pages:
            continue
        text = normalise(hit.chunk.text)
        named = next((name for name in names if normalise(name) in text), None)
        if named is not None:
            return Hop(hit.chunk, named, names[named])
    return None
