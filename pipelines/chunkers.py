"""Chunking strategies. `heading` splits at headings and packs blocks up to a token budget counted
with the embedding model's own tokenizer, so no chunk is cut by the model's window."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from pipelines.documents import Chunk, Document, make_chunk_id

TokenCounter = Callable[[str], int]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\s*\{\s*#([\w\-]+)\s*\}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？।॥])\s+")


def slugify(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text).strip("-")


@dataclass
class Section:
    heading_path: list[str]
    anchor: str
    heading_line: str
    blocks: list[str] = field(default_factory=list)


def split_blocks(lines: list[str]) -> list[str]:
    """Blocks are runs of lines separated by blank lines; a fenced code block is one block."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in lines:
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            if current:
                blocks.append("\n".join(current))
                current = []
            fence = stripped[:3]
            current.append(line)
            continue
        if fence is not None:
            current.append(line)
            if stripped.startswith(fence) and len(current) > 1:
                blocks.append("\n".join(current))
                current, fence = [], None
            continue
        if not stripped:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def parse_sections(text: str, title: str) -> list[Section]:
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    current = Section(heading_path=[title] if title else [], anchor="", heading_line="")
    body: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line.strip())
        if heading is None:
            body.append(line)
            continue
        current.blocks = split_blocks(body)
        sections.append(current)
        body = []
        level, raw = len(heading.group(1)), heading.group(2)
        explicit = _ANCHOR.search(raw)
        name = _ANCHOR.sub("", raw).strip()
        path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, name)]
        current = Section(
            heading_path=[h for _, h in path],
            anchor=explicit.group(1) if explicit else slugify(name),
            heading_line=f"{heading.group(1)} {name}",
        )
    current.blocks = split_blocks(body)
    sections.append(current)
    return [s for s in sections if s.blocks or s.heading_line]


def _split_code(block: str, count: TokenCounter, limit: int) -> list[str]:
    lines = block.split("\n")
    opening, closing = lines[0], lines[-1] if len(lines) > 1 else lines[0][:3]
    inner = lines[1:-1] if len(lines) > 1 else []
    pieces, current = [], []
    for line in inner:
        if current and count("\n".join([opening, *current, line, closing])) > limit:
            pieces.append("\n".join([opening, *current, closing]))
            current = []
        current.append(line)
    if current or not pieces:
        pieces.append("\n".join([opening, *current, closing]))
    return pieces


def _split_table(block: str, count: TokenCounter, limit: int) -> list[str]:
    rows = block.split("\n")
    header = rows[:2]
    pieces, current = [], []
    for row in rows[2:]:
        if current and count("\n".join([*header, *current, row])) > limit:
            pieces.append("\n".join([*header, *current]))
            current = []
        current.append(row)
    pieces.append("\n".join([*header, *current]))
    return pieces


def _split_prose(block: str, count: TokenCounter, limit: int) -> list[str]:
    units = [u for u in _SENTENCE_END.split(block) if u]
    pieces, current = [], ""
    for unit in units:
        if count(unit) > limit:  # one enormous sentence: fall back to words
            words, unit_piece = unit.split(" "), ""
            for word in words:
                if unit_piece and count(unit_piece + " " + word) > limit:
                    pieces.append(unit_piece)
                    unit_piece = ""
                unit_piece = f"{unit_piece} {word}".strip()
            unit = unit_piece
        candidate = f"{current} {unit}".strip()
        if current and count(candidate) > limit:
            pieces.append(current)
            current = unit
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def split_block(block: str, count: TokenCounter, limit: int) -> list[str]:
    """Cut one block that alone exceeds the limit, keeping its own structure whole."""
    if count(block) <= limit:
        return [block]
    if block.lstrip().startswith(("```", "~~~")):
        return _split_code(block, count, limit)
    if block.lstrip().startswith("|") and "\n" in block:
        return _split_table(block, count, limit)
    return _split_prose(block, count, limit)


def _overlap_tail(text: str, count: TokenCounter, overlap: int) -> str:
    """The last sentences of a prose piece that fit within the overlap budget."""
    if overlap <= 0 or text.lstrip().startswith(("```", "~~~", "|")):
        return ""
    tail = ""
    for sentence in reversed(_SENTENCE_END.split(text)):
        candidate = f"{sentence} {tail}".strip()
        if count(candidate) > overlap:
            break
        tail = candidate
    return tail


def chunk_heading(
    document: Document, count: TokenCounter, target: int = 450, limit: int = 500, overlap: int = 50
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in parse_sections(document.text, document.title):
        head = section.heading_line
        budget = limit - (count(head) + 2 if head else 0)
        blocks = [piece for block in section.blocks for piece in split_block(block, count, budget)]
        packed: list[str] = []
        current: list[str] = []
        for block in blocks:
            body = "\n\n".join([*current, block])
            if current and count(body) > min(target, budget):
                packed.append("\n\n".join(current))
                tail = _overlap_tail(current[-1], count, overlap)
                current = [tail] if tail and count(f"{tail}\n\n{block}") <= budget else []
            current.append(block)
        if current or not packed:
            packed.append("\n\n".join(current))
        for body in packed:
            text = f"{head}\n\n{body}".strip() if head else body.strip()
            if not text:
                continue
            position = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=make_chunk_id(document.document_id, "heading", position),
                    document_id=document.document_id,
                    title=document.title,
                    heading_path=section.heading_path,
                    anchor=section.anchor,
                    source_uri=document.source_uri + (f"#{section.anchor}" if section.anchor else ""),
                    strategy="heading",
                    language=document.language,
                    position=position,
                    text=text,
                    token_count=count(text),
                )
            )
    return chunks


STRATEGIES: dict[str, Callable[..., list[Chunk]]] = {"heading": chunk_heading}


def chunk_document(document: Document, strategy: str, count: TokenCounter, **sizes: int) -> list[Chunk]:
    try:
        chunker = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown chunk strategy {strategy!r}; known: {sorted(STRATEGIES)}") from None
    return chunker(document, count, **sizes)
