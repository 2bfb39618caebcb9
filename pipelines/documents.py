"""The records that flow through ingestion: documents and chunks (DESIGN.md, Contracts)."""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from pipelines.text.markdown import LIST_ITEM


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """One source document. `document_id` is its path relative to the source root."""

    document_id: str
    source_uri: str
    text: str
    content_hash: str
    fetched_at: str
    title: str = ""
    language: str = "en"
    access: tuple[str, ...] = ("public",)  # the groups that may read it (pipelines/access.py)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    document_id: str
    title: str
    heading_path: list[str]
    anchor: str
    source_uri: str
    strategy: str
    language: str
    position: int
    text: str
    context_text: str | None = None
    token_count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # Its page's access groups (pipelines/access.py); a chunk indexed before groups existed reads as public.
    access: list[str] = field(default_factory=lambda: ["public"])

    def payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Chunk:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in payload.items() if k in names})

    @property
    def generation_text(self) -> str:
        """What the generator sees: the wider context when the strategy indexes less."""
        return self.context_text or self.text

    def anchor_for(self, quoted: str) -> str:
        """The anchor of the section a quoted sentence comes from, looked up in what the generator saw:
        first the chunk's own text (a `heading_packed` chunk holds several sections, `extra["sections"]`:
        [offset in the chunk's `plain_text`, anchor]), then its neighbour context (`extra["context_sections"]`,
        the same for `context_text`). The chunk's anchor when neither places it: a quote not found, a chunk
        indexed before the context carried its sections, or a context rewritten since (CRAG's strips)."""
        extra = self.extra or {}
        key = plain_text(LIST_ITEM.sub("", quoted, count=1))[:80]  # a list item as the page writes it, bullet aside
        where = find_quote(plain_text(self.text), key)
        if where >= 0:
            return section_at(extra.get("sections"), where) or self.anchor
        starts = extra.get("context_sections")
        if starts and self.context_text is not None:
            seen = plain_text(self.context_text)
            # The offsets hold only for the context they were recorded for: a rewritten one has another length.
            where = find_quote(seen, key) if len(seen) == extra.get("context_chars") else -1
            if where >= 0:
                return section_at(starts, where) or self.anchor
        return self.anchor

    def source_uri_for(self, quoted: str) -> str:
        return self.uri_at(self.anchor_for(quoted))

    def uri_at(self, anchor: str) -> str:
        """The chunk's page URI pointing at `anchor` (one of its sections); the bare page for none."""
        base = self.source_uri.split("#", 1)[0]
        return f"{base}#{anchor}" if anchor else base

    def own_sections(self) -> list[tuple[str, str]]:
        """(anchor, plain text) of each section the chunk's own text holds, in order: one for a chunk
        that records no sections."""
        text = plain_text(self.text)
        sections = self.extra.get("sections") if self.extra else None
        if not sections:
            return [(self.anchor, text)]
        ends = [offset for offset, _ in sections[1:]] + [len(text)]
        return [(str(anchor), text[offset:end]) for (offset, anchor), end in zip(sections, ends, strict=True)]


def section_at(sections: list[list[Any]] | None, offset: int) -> str | None:
    """The anchor of the last section starting at or before `offset`; None without sections."""
    if not sections:
        return None
    before = [anchor for start, anchor in sections if start <= offset]
    return str(before[-1]) if before else str(sections[0][1])


def section_starts(parts: list[tuple[str, list[list[Any]]]]) -> list[list[Any]]:
    """[offset, anchor] of each section in texts joined by blank lines, offsets in the join's `plain_text`:
    each part is a text and its own section starts within it (offsets in its own `plain_text`). A section
    continued by the next part (a long section cut in several chunks) is listed once."""
    starts: list[list[Any]] = []
    offset = 0
    for text, sections in parts:
        size = len(plain_text(text))
        if not size:  # nothing of it is in the join's plain text, nor a space after it
            continue
        for start, anchor in sections:
            if not starts or starts[-1][1] != anchor:
                starts.append([offset + start, anchor])
        offset += size + 1  # the blank line between parts is one space in plain text
    return starts


def plain_text(text: str) -> str:
    """Text without Markdown emphasis and code ticks, white space collapsed: a quoted sentence (which
    the extractive generator copies without markup) is found in its chunk by this form."""
    return " ".join(text.replace("`", "").replace("*", "").split())


# What the extractive generator also drops from a sentence it quotes (pipelines/answering/extractive.py): a
# link's target (its text stays) and `_` emphasis markers (not the underscores inside a word).
_QUOTE_MARKUP = re.compile(r"\[([^\]]*)\]\([^)]*\)|(?<!\w)_+|_+(?!\w)")


def find_quote(plain: str, quote: str) -> int:
    """Where `quote` starts in `plain` (a `plain_text`), or -1. Found verbatim, or else once links are
    reduced to their text and `_` emphasis is dropped on both sides, as the generator quotes them; the
    offset is always one in `plain`, where a chunk's section offsets are recorded."""
    where = plain.find(quote)
    if where >= 0 or not quote:
        return where
    kept: list[str] = []
    origin: list[int] = []  # for each kept character, its offset in `plain`
    at = 0
    for match in _QUOTE_MARKUP.finditer(plain):
        kept.append(plain[at : match.start()])
        origin.extend(range(at, match.start()))
        if match.group(1) is not None:  # a link: its text, at the text's own offsets
            kept.append(match.group(1))
            origin.extend(range(match.start() + 1, match.start() + 1 + len(match.group(1))))
        at = match.end()
    kept.append(plain[at:])
    origin.extend(range(at, len(plain)))
    loose = _QUOTE_MARKUP.sub(lambda m: m.group(1) or "", quote)
    where = "".join(kept).find(loose)
    return origin[where] if where >= 0 and loose else -1


def chunk_key(chunk_id: str) -> str:
    """The id a chunk's point has in the vector store (a UUID derived from the chunk id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragline:{chunk_id}"))


def make_chunk_id(document_id: str, strategy: str, position: int) -> str:
    """Stable, short, marker-safe id: the same document, strategy and position give the same id."""
    digest = hashlib.blake2b(f"{document_id}\x00{strategy}\x00{position}".encode(), digest_size=6).hexdigest()
    return f"{digest}-{position}"
