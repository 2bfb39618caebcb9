"""Chunking strategies, selectable by name (`STRATEGIES`), all counting tokens with the embedding
model's own tokenizer so no chunk is cut by the model's window:

- `heading`: split at headings, pack blocks up to a target, split long code/tables keeping structure;
- `heading_packed`: the same sections, with runs of short neighbouring sections packed together;
- `fixed`: fixed token windows with overlap over the whole page;
- `sentence_window`: a few sentences per indexed unit, with a wider `context_text` for generation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pipelines.documents import Chunk, Document, make_chunk_id, plain_text, section_starts

TokenCounter = Callable[[str], int]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\s*\{\s*#([\w\-]+)\s*\}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？।॥])\s+")


def heading_level(text: str) -> int:
    """The level of the heading line `text` starts with (as the chunkers read headings); 0 for none."""
    found = _HEADING.match(text.split("\n", 1)[0].strip())
    return len(found.group(1)) if found else 0


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


def _cut_line(line: str, count: TokenCounter, limit: int) -> list[str]:
    """A code line longer than the limit (a base64 blob, a minified bundle) cut into runs of characters
    that fit, in order; nothing dropped. Halving keeps the token counts to O(log n) per piece."""
    pieces: list[str] = []
    rest = line
    while rest:
        size = len(rest)
        while size > 1 and count(rest[:size]) > limit:
            size //= 2
        pieces.append(rest[:size])
        rest = rest[size:]
    return pieces


def _split_code(block: str, count: TokenCounter, limit: int) -> list[str]:
    lines = block.split("\n")
    opening, closing = lines[0], lines[-1] if len(lines) > 1 else lines[0][:3]
    inner = lines[1:-1] if len(lines) > 1 else []
    budget = limit - count(f"{opening}\n{closing}")
    inner = [cut for line in inner for cut in (_cut_line(line, count, budget) if count(line) > budget else [line])]
    pieces: list[str] = []
    current: list[str] = []
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
    header: list[str] = rows[:2]
    pieces: list[str] = []
    if count("\n".join(header)) > limit // 2:
        # A header too heavy to repeat (GitLab pads its cells to the widest row): it goes once, first.
        lead = "\n".join(header)
        pieces = [lead] if count(lead) <= limit else _split_prose(lead, count, limit)
        header = []
    current: list[str] = []
    for row in rows[2:]:
        if count("\n".join([*header, row])) > limit:
            # A row too wide to sit under its header (padded header cells cost tokens too): the row
            # goes alone, cut like prose if it must be, rather than over the limit.
            if current:
                pieces.append("\n".join([*header, *current]))
                current = []
            pieces.extend([row] if count(row) <= limit else _split_prose(row, count, limit))
            continue
        if current and count("\n".join([*header, *current, row])) > limit:
            pieces.append("\n".join([*header, *current]))
            current = []
        current.append(row)
    if current or not pieces:
        pieces.append("\n".join([*header, *current]))
    return pieces


def _split_prose(block: str, count: TokenCounter, limit: int) -> list[str]:
    units = [u for u in _SENTENCE_END.split(block) if u]
    pieces, current = [], ""
    for unit in units:
        if count(unit) > limit:  # one enormous sentence: fall back to words, keeping the order
            if current:
                pieces.append(current)
                current = ""
            words, unit_piece = unit.split(" "), ""
            for word in words:
                if count(word) > limit:  # one "word" over the limit (a run of links with no space): by characters
                    if unit_piece:
                        pieces.append(unit_piece)
                    *whole, unit_piece = _cut_line(word, count, limit)
                    pieces.extend(whole)
                    continue
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


def section_texts(section: Section, count: TokenCounter, target: int, limit: int, overlap: int) -> list[str]:
    """One section as chunk texts: its blocks packed up to the target under its heading line, a long
    section cut into several with `overlap` tokens of trailing sentences repeated."""
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
    texts = [f"{head}\n\n{body}".strip() if head else body.strip() for body in packed]
    return [t for t in texts if t]


def chunk_heading(
    document: Document, count: TokenCounter, target: int = 450, limit: int = 500, overlap: int = 50, **_: int
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in parse_sections(document.text, document.title):
        for text in section_texts(section, count, target, limit, overlap):
            chunks.append(_chunk(document, "heading", len(chunks), text, section.heading_path, section.anchor, count))
    return chunks


def chunk_heading_packed(
    document: Document, count: TokenCounter, target: int = 450, limit: int = 500, overlap: int = 50, **_: int
) -> list[Chunk]:
    """Heading sections, with runs of short neighbouring sections packed into one chunk up to the target.

    A page of many short sections (a tutorial step by step) otherwise becomes many small chunks, each
    too short to carry the words a question uses; a section is never cut to fill a chunk, and a long
    one still becomes chunks of its own. The chunk's heading path and anchor are its first section's."""
    chunks: list[Chunk] = []
    run: list[tuple[Section, str]] = []  # short sections waiting to be packed together

    def flush() -> None:
        if run:
            text = "\n\n".join(t for _, t in run)
            first = run[0][0]
            chunk = _chunk(document, "heading_packed", len(chunks), text, first.heading_path, first.anchor, count)
            if len(run) > 1:  # where each section starts, so a citation can link to the one it quotes
                starts = section_starts([(part, [[0, section.anchor]]) for section, part in run])
                paths: dict[str, list[str]] = {}  # and its heading path, shown beside that link
                for section, _ in run:
                    paths.setdefault(section.anchor, section.heading_path)
                chunk = replace(chunk, extra={**chunk.extra, "sections": starts, "section_paths": paths})
            chunks.append(chunk)
            run.clear()

    for section in parse_sections(document.text, document.title):
        texts = section_texts(section, count, target, limit, overlap)
        if len(texts) != 1:
            flush()
            for text in texts:
                chunks.append(
                    _chunk(document, "heading_packed", len(chunks), text, section.heading_path, section.anchor, count)
                )
            continue
        if run and count("\n\n".join([*(t for _, t in run), texts[0]])) > target:
            flush()
        run.append((section, texts[0]))
    flush()
    return chunks


def _chunk(
    document: Document,
    strategy: str,
    position: int,
    text: str,
    path: list[str],
    anchor: str,
    count: TokenCounter,
    context_text: str | None = None,
) -> Chunk:
    return Chunk(
        chunk_id=make_chunk_id(document.document_id, strategy, position),
        document_id=document.document_id,
        title=document.title,
        heading_path=path,
        anchor=anchor,
        source_uri=document.source_uri + (f"#{anchor}" if anchor else ""),
        strategy=strategy,
        language=document.language,
        position=position,
        text=text,
        context_text=context_text,
        token_count=count(text),
        access=list(document.access),
    )


def heading_marks(text: str, title: str) -> list[tuple[int, list[str], str]]:
    """(character offset, heading path, anchor) of every heading outside code fences, in order."""
    marks: list[tuple[int, list[str], str]] = [(0, [title] if title else [], "")]
    path: list[tuple[int, str]] = []
    offset, in_fence = 0, False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(stripped)
        if heading:
            level, raw = len(heading.group(1)), heading.group(2)
            explicit = _ANCHOR.search(raw)
            name = _ANCHOR.sub("", raw).strip()
            path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, name)]
            marks.append((offset, [h for _, h in path], explicit.group(1) if explicit else slugify(name)))
        offset += len(line)
    return marks


def chunk_fixed(
    document: Document, count: TokenCounter, target: int = 450, limit: int = 500, overlap: int = 50, **_: int
) -> list[Chunk]:
    """Windows of `target` tokens over the whole page, each starting `overlap` tokens before the last ended.

    Windows follow word boundaries and are cut from the original text, so code and tables keep
    their layout; the heading path is the one in effect where a window starts.
    """
    text = document.text
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    seen: dict[str, int] = {}
    costs = []
    for start, end in words:
        word = text[start:end]
        if word not in seen:
            seen[word] = count(word)
        costs.append(seen[word])
    marks = heading_marks(text, document.title)
    window = min(target, limit)
    chunks: list[Chunk] = []
    first = 0
    while first < len(words):
        last, total = first, 0
        while last < len(words) and (last == first or total + costs[last] <= window):
            total += costs[last]
            last += 1
        body = text[words[first][0] : words[last - 1][1]]
        while last - first > 1 and count(body) > limit:  # tokenizers that merge across spaces
            last -= 1
            body = text[words[first][0] : words[last - 1][1]]
        _start, path, anchor = [m for m in marks if m[0] <= words[first][0]][-1]  # the last heading before
        if last - first == 1 and count(body) > limit:  # one "word" over the limit: a base64 blob
            for piece in _cut_line(body, count, limit):
                chunks.append(_chunk(document, "fixed", len(chunks), piece, path, anchor, count))
            first = last
            continue
        chunks.append(_chunk(document, "fixed", len(chunks), body, path, anchor, count))
        if last >= len(words):
            break
        if costs[last] > window:  # the next word fills a window alone: no overlap, or windows crawl to it
            first = last
            continue
        back, kept = last, 0
        while back - 1 > first + 0 and kept + costs[back - 1] <= overlap:
            back -= 1
            kept += costs[back]
        first = max(back, first + 1)
    return chunks


def _is_structured(block: str) -> bool:
    stripped = block.lstrip()
    return stripped.startswith(("```", "~~~")) or (stripped.startswith("|") and "\n" in stripped)


def sentence_units(section: Section, count: TokenCounter, limit: int, sentences: int) -> list[str]:
    """A section's blocks as small units: `sentences` sentences of prose, or one piece of code or table."""
    units: list[str] = []
    for block in section.blocks:
        if _is_structured(block):
            units.extend(split_block(block, count, limit))
            continue
        parts = [p.strip() for p in _SENTENCE_END.split(block) if p.strip()]
        for start in range(0, len(parts), max(1, sentences)):
            units.extend(split_block(" ".join(parts[start : start + sentences]), count, limit))
    return units


def chunk_sentence_window(
    document: Document,
    count: TokenCounter,
    target: int = 450,
    limit: int = 500,
    overlap: int = 50,
    sentences: int = 3,
    **_: int,
) -> list[Chunk]:
    """Index a few sentences at a time; each unit carries its neighbours (up to `target` tokens) as context.

    Small units match a question precisely; the generator still reads the surrounding passage.
    """
    chunks: list[Chunk] = []
    for section in parse_sections(document.text, document.title):
        head = section.heading_line
        units = sentence_units(section, count, limit, sentences)
        if not units and head:
            units = [head]  # a heading with no body of its own still gets indexed
        costs = [count(u) for u in units]
        budget = target - (count(head) if head else 0)
        for k, unit in enumerate(units):
            lo, hi = widen(costs, k, budget)
            context = "\n\n".join([head, *units[lo : hi + 1]] if head and unit != head else units[lo : hi + 1])
            position = len(chunks)
            chunks.append(
                _chunk(
                    document,
                    "sentence_window",
                    position,
                    unit,
                    section.heading_path,
                    section.anchor,
                    count,
                    context_text=context,
                )
            )
    return chunks


STRATEGIES: dict[str, Callable[..., list[Chunk]]] = {
    "heading": chunk_heading,
    "heading_packed": chunk_heading_packed,
    "fixed": chunk_fixed,
    "sentence_window": chunk_sentence_window,
}


def widen(costs: list[int], k: int, budget: int) -> tuple[int, int]:
    """The run of units around unit `k`, grown one unit left and one right in turn while the total cost
    stays within `budget`: (first, last) indices, inclusive."""
    lo, hi, used = k, k, costs[k]
    grew = True
    while grew:
        grew = False
        if lo > 0 and used + costs[lo - 1] <= budget:
            lo, used, grew = lo - 1, used + costs[lo - 1], True
        if hi + 1 < len(costs) and used + costs[hi + 1] <= budget:
            hi, used, grew = hi + 1, used + costs[hi + 1], True
    return lo, hi


def with_neighbour_context(chunks: list[Chunk], budget: int) -> list[Chunk]:
    """Each chunk of one document with its neighbours as `context_text`, widened left and right in turn
    while the whole stays within `budget` tokens ("small to big": the index matches the chunk, the
    generator reads the passage around it). A chunk that already has a context (sentence_window)
    or whose neighbours do not fit is left as it is."""
    out: list[Chunk] = []
    costs = [c.token_count for c in chunks]
    for k, chunk in enumerate(chunks):
        if chunk.context_text is not None or budget <= chunk.token_count:
            out.append(chunk)
            continue
        lo, hi = widen(costs, k, budget)
        if hi == lo:
            out.append(chunk)
            continue
        around = chunks[lo : hi + 1]
        wide = "\n\n".join(c.text for c in around)
        # Where each neighbour's sections start, so a sentence quoted from a neighbour links to its own
        # section, not the hit's. Only when the context spans more than one anchor: a few bytes a chunk.
        starts = section_starts([(c.text, (c.extra or {}).get("sections") or [[0, c.anchor]]) for c in around])
        extra = {**chunk.extra, "context_sections": starts, "context_chars": len(plain_text(wide))}
        out.append(replace(chunk, context_text=wide, extra=extra if len(starts) > 1 else chunk.extra))
    return out


def chunk_document(
    document: Document, strategy: str, count: TokenCounter, context: int = 0, **sizes: int
) -> list[Chunk]:
    """Chunk one document with the named strategy; every strategy takes target, limit and overlap.
    `context` > 0 gives each chunk its neighbours within that many tokens as generation context."""
    try:
        chunker = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown chunk strategy {strategy!r}; known: {sorted(STRATEGIES)}") from None
    chunks = chunker(document, count, **sizes)
    return with_neighbour_context(chunks, context) if context > 0 else chunks
