"""Which source-language chunk a translated chunk was translated from.

Documentation sites keep a translation at the original's path with the language folder swapped
(`es/advanced/events.md` translates `en/advanced/events.md`; `runner/ja/...` translates `runner/en/...`).
A translated chunk's original is a chunk of that original page, found in one of two ways:

- by section anchor, when the translation keeps the original's (`## Excluir de OpenAPI { #exclude-from-openapi }`):
  the chunk of the original page holding the chunk's own anchor or, for a `heading_packed` chunk, the
  first of its sections' anchors that the original page has;
- by section position, when none of its anchors is on the original page (a translation without explicit
  anchors, whose anchors are slugs of its translated headings, or one that renamed them): the chunk of
  the original page holding the section at the same place in the page's sequence of sections. Only
  when the two pages have the same outline (the same sequence of heading levels) and no anchor the two
  pages share sits at another place, since a wrong original is worse than none; only for the strategies
  whose chunks are whole sections that start with their heading line (`heading`, `heading_packed`),
  since the heading levels are read from the chunks' own text. An anchor match always wins.

`Originals.linked_by` counts the links made each way. The table is read from the index's own payloads
once per index version and strategy (like the in-memory BM25 engine), so it always matches what the
vector store holds; payloads need nothing they did not carry before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog

from pipelines.caching.built_once import BuiltOnce
from pipelines.documents import Chunk, chunk_key, plain_text
from pipelines.ingestion.chunkers import heading_level
from pipelines.ports import VectorIndex
from pipelines.text.language import TRANSLATION_FOLDERS

log = structlog.get_logger(__name__)

# Strategies whose chunks hold whole sections, each starting with its heading line: their pages' outlines
# can be read back from the chunks. `fixed` windows start mid-section and `sentence_window` units carry
# no heading line, so their translations link by anchor only.
WHOLE_SECTIONS = frozenset({"heading", "heading_packed"})


def original_document(document_id: str, source_language: str) -> str | None:
    """The original's document id: the innermost translation folder set to the source language; None
    when the path names no language or already names the source."""
    parts = document_id.split("/")
    for i in range(len(parts) - 2, -1, -1):  # folders only, innermost first (as `folder_language` reads them)
        code = parts[i].lower().replace("_", "-").split("-")[0]
        if code in TRANSLATION_FOLDERS and len(parts[i]) in (2, 5):
            return None if code == source_language else "/".join([*parts[:i], source_language, *parts[i + 1 :]])
    return None


def anchors(chunk: Chunk) -> list[str]:
    """The section anchors a chunk holds, first to last."""
    sections = chunk.extra.get("sections") if chunk.extra else None
    found = [str(anchor) for _, anchor in sections] if sections else []
    return list(dict.fromkeys([chunk.anchor, *found]))


@dataclass(frozen=True)
class Outline:
    """One page's sections in page order, read from its chunks: each section's heading level, anchor and
    the key of the chunk it starts in; `first` maps each chunk's key to the index of its first section."""

    levels: tuple[int, ...]
    anchors: tuple[str, ...]
    keys: tuple[str, ...]
    first: dict[str, int]

    @classmethod
    def of(cls, chunks: Iterable[Chunk], key_of: Callable[[str], str] = chunk_key) -> Outline:
        levels: list[int] = []
        names: list[str] = []
        keys: list[str] = []
        first: dict[str, int] = {}
        for chunk in sorted(chunks, key=lambda c: c.position):
            key = key_of(chunk.chunk_id)
            sections = chunk.extra.get("sections") if chunk.extra else None
            plain = plain_text(chunk.text) if sections else ""  # `sections` offsets are in the plain text
            for n, (offset, anchor) in enumerate(sections or [[0, chunk.anchor]]):
                # The start of the chunk is read raw: a page's text before its first heading may begin with
                # a code fence whose `# comment` plain_text would show as a heading.
                level = heading_level(chunk.text if offset == 0 else plain[offset:])
                if n == 0 and names and (names[-1], levels[-1]) == (str(anchor), level):
                    # A long section cut into several chunks: each piece repeats its heading line; one
                    # section. (A heading and its subheading can share a slug: `# Status codes` over
                    # `## Status codes`; their levels tell them apart.)
                    first[key] = len(names) - 1
                    continue
                if n == 0:
                    first[key] = len(names)
                levels.append(level)
                names.append(str(anchor))
                keys.append(key)
        return cls(tuple(levels), tuple(names), tuple(keys), first)

    def aligns_with(self, original: Outline) -> bool:
        """Whether section i of this page translates section i of `original`: the same heading levels in
        the same order, and every anchor the two pages share at the same place (sections moved around
        under an unchanged outline are not aligned)."""
        if self.levels != original.levels:
            return False
        places: dict[str, set[int]] = defaultdict(set)
        for i, anchor in enumerate(original.anchors):
            places[anchor].add(i)
        return all(i in places[a] for i, a in enumerate(self.anchors) if a in places)


class Originals:
    """Translated chunk key -> the key of its original's chunk (source language), for one index version.
    `linked_by` counts the links made by anchor and by position; `unlinked` the translated chunks of
    pages with an original that got no link."""

    def __init__(self, chunks: Iterable[Chunk], source_language: str) -> None:
        by_anchor: dict[tuple[str, str], str] = {}
        keys: dict[str, str] = {}  # chunk id -> point key, worked out once (a uuid5 each)
        pages: dict[tuple[str, str], list[Chunk]] = defaultdict(list)  # (document, strategy) -> its chunks
        translated: list[Chunk] = []
        for chunk in chunks:
            pages[(chunk.document_id, chunk.strategy)].append(chunk)
            key = keys[chunk.chunk_id] = chunk_key(chunk.chunk_id)
            if chunk.language == source_language:
                for anchor in anchors(chunk):
                    by_anchor.setdefault((chunk.document_id, anchor), key)
            else:
                translated.append(chunk)
        self.source_language = source_language
        self.linked_by: dict[str, int] = {"anchor": 0, "position": 0}
        self.unlinked = 0
        self._original: dict[str, str] = {}
        outlines: dict[tuple[str, str], Outline] = {}
        aligned: dict[tuple[str, str], bool] = {}  # translated page -> its outline aligns with the original's

        def outline(page: tuple[str, str]) -> Outline:
            if page not in outlines:  # read only for pages that need the fallback, once each
                outlines[page] = Outline.of(pages[page], keys.__getitem__)
            return outlines[page]

        for chunk in translated:
            document = original_document(chunk.document_id, source_language)
            if document is None:
                continue
            key = keys[chunk.chunk_id]
            found = next((by_anchor[(document, a)] for a in anchors(chunk) if (document, a) in by_anchor), None)
            if found is not None:
                self._original[key] = found
                self.linked_by["anchor"] += 1
                continue
            page, original = (chunk.document_id, chunk.strategy), (document, chunk.strategy)
            if original not in pages:  # never translated from an indexed page: nothing to link, nor to count
                continue
            if chunk.strategy in WHOLE_SECTIONS:
                if page not in aligned:
                    aligned[page] = outline(page).aligns_with(outline(original))
                if aligned[page]:
                    self._original[key] = outline(original).keys[outline(page).first[key]]
                    self.linked_by["position"] += 1
                    continue
            self.unlinked += 1

    def __len__(self) -> int:
        return len(self._original)

    def of(self, key: str) -> str | None:
        return self._original.get(key)

    def lead(self, hits: Sequence[tuple[str, float]], own: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        """A source lane's list: the originals of `hits` (the question lane's, in its order), then the
        lane's own hits not already listed."""
        listed: dict[str, float] = {}
        for key, score in hits:
            original = self._original.get(key)
            if original is not None and original not in listed:
                listed[original] = score
        for key, score in own:
            listed.setdefault(key, score)
        return list(listed.items())


class OriginalsCache:
    """One `Originals` table per (index version, caller's access groups, strategy, source language), built on
    first use from the chunks the caller's view holds."""

    def __init__(self, keep: int = 4) -> None:
        self._tables: BuiltOnce[tuple[str, str, str | None, str], Originals] = BuiltOnce(keep)

    def table(self, version: str, index: VectorIndex, strategy: str | None, source_language: str) -> Originals:
        def build() -> Originals:
            table = Originals(index.scroll_chunks(strategy, None), source_language)
            log.info(
                "translation_originals_built",
                version=version,
                strategy=strategy,
                linked=len(table),
                by_anchor=table.linked_by["anchor"],
                by_position=table.linked_by["position"],
                unlinked=table.unlinked,
            )
            return table

        return self._tables.get((version, index.access_key, strategy, source_language), build)
