"""The records that flow through ingestion: documents and chunks (DESIGN.md, Contracts)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any


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
        """The anchor of the section a quoted sentence comes from. A `heading_packed` chunk holds several
        sections (`extra["sections"]`: [offset in the chunk's `plain_text`, anchor]); for any
        other chunk, or a quote not found in the chunk's own text, the chunk's anchor."""
        sections = self.extra.get("sections") if self.extra else None
        if not sections:
            return self.anchor
        where = plain_text(self.text).find(plain_text(quoted)[:80])
        if where < 0:
            return self.anchor
        return [anchor for offset, anchor in sections if offset <= where][-1]

    def source_uri_for(self, quoted: str) -> str:
        anchor = self.anchor_for(quoted)
        base = self.source_uri.split("#", 1)[0]
        return f"{base}#{anchor}" if anchor else base


def plain_text(text: str) -> str:
    """Text without Markdown emphasis and code ticks, white space collapsed: a quoted sentence (which
    the extractive generator copies without markup) is found in its chunk by this form."""
    return " ".join(text.replace("`", "").replace("*", "").split())


def chunk_key(chunk_id: str) -> str:
    """The id a chunk's point has in the vector store (a UUID derived from the chunk id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragline:{chunk_id}"))


def make_chunk_id(document_id: str, strategy: str, position: int) -> str:
    """Stable, short, marker-safe id: the same document, strategy and position give the same id."""
    digest = hashlib.blake2b(f"{document_id}\x00{strategy}\x00{position}".encode(), digest_size=6).hexdigest()
    return f"{digest}-{position}"
