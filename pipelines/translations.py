"""Which source-language chunk a translated chunk was translated from.

Documentation sites keep a translation at the original's path with the language folder swapped
(`es/advanced/events.md` translates `en/advanced/events.md`; `runner/ja/...` translates `runner/en/...`)
and keep its section anchors (`## Excluir de OpenAPI { #exclude-from-openapi }`). A translated chunk's
original is the chunk of the original page that holds the same section anchor: the chunk's own or,
for a `heading_packed` chunk, the first of its sections that the original page has.

The table is read from the index's own payloads once per index version and strategy (like the
in-memory BM25 engine), so it always matches what the vector store holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import structlog

from pipelines.built_once import BuiltOnce
from pipelines.documents import Chunk, chunk_key
from pipelines.language import TRANSLATION_FOLDERS
from pipelines.ports import VectorIndex

log = structlog.get_logger(__name__)


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


class Originals:
    """Translated chunk key -> the key of its original's chunk (source language), for one index version."""

    def __init__(self, chunks: Iterable[Chunk], source_language: str) -> None:
        by_anchor: dict[tuple[str, str], str] = {}
        translated: list[Chunk] = []
        for chunk in chunks:
            if chunk.language == source_language:
                for anchor in anchors(chunk):
                    by_anchor.setdefault((chunk.document_id, anchor), chunk_key(chunk.chunk_id))
            else:
                translated.append(chunk)
        self.source_language = source_language
        self._original: dict[str, str] = {}
        for chunk in translated:
            document = original_document(chunk.document_id, source_language)
            if document is None:
                continue
            for anchor in anchors(chunk):
                key = by_anchor.get((document, anchor))
                if key is not None:
                    self._original[chunk_key(chunk.chunk_id)] = key
                    break

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
    """One `Originals` table per (index version, strategy, source language), built on first use."""

    def __init__(self, keep: int = 4) -> None:
        self._tables: BuiltOnce[tuple[str, str | None, str], Originals] = BuiltOnce(keep)

    def table(self, version: str, index: VectorIndex, strategy: str | None, source_language: str) -> Originals:
        def build() -> Originals:
            table = Originals(index.scroll_chunks(strategy, None), source_language)
            log.info("translation_originals_built", version=version, strategy=strategy, linked=len(table))
            return table

        return self._tables.get((version, strategy, source_language), build)
