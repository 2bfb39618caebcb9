"""What an answer can quote from a passage, and the blocks a quoted sentence brings with it.

Units. A passage's prose gives its sentences, each list item its own (an item is a sentence without its full
stop: joined to the next one it made a "sentence" no page has); a Markdown table gives each data row as one
unit, its cells joined by " | " (`table_rows`): reference pages keep settings, flags and defaults in tables.
Headings are never units, and neither is code.

Blocks. A quoted unit ending in a colon announces what follows it: "... pass its address:" and a command, "The
minimum specs are:" and a list. `introduced` maps such a unit to the fenced code block or the list right after
it, as the passage has it; `block_parts` gives that block as the answer shows it, one part per list item.
"""

from __future__ import annotations

import functools
import itertools
import re
import textwrap
from collections.abc import Mapping, Sequence

from pipelines.answering.citations import split_sentences
from pipelines.text.analysis import CJK_RUN
from pipelines.text.markdown import LIST_ITEM

_FENCE = re.compile(r"(```|~~~).*?(\1|\Z)", re.S)
# Emphasis and code markup, but not the underscores inside identifiers such as RAGLINE_PORT.
_MARKUP = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)|^\s*>+\s?", re.M)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
# An inline code span on one line, as CommonMark reads it: a run of ticks opens it and the next run of as many
# closes it, so `` ` `` holds a tick.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)([^\n]+?)(?<!`)\1(?!`)")  # group 2: the content
_TICKS = re.compile(r"`+")
# Set-aside spans stand in the text as private-use characters (not word characters, like the ticks they replace).
_SPAN_MARK = 0xF0000
_SPAN_MARKS = re.compile("[\U000f0000-\U000ffffd]")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")  # |---|:--:| under a header
_CELL_BREAK = re.compile(r"(?<!\\)\|")  # a cell may hold an escaped \|
# A tag with attributes (`<font color="...">`): markup that styles text. A placeholder such as `<host>` is not one.
_HTML_TAG = re.compile(r"<[A-Za-z][\w-]*\s+[\w-]+\s*=\s*[\"']")
_OPENING_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_FENCE_MARK = re.compile(r"(?:```|~~~)[\w+-]*")  # a fence's ticks and its language tag
# What ends a unit that announces a block: a colon, or the full-width one of Chinese and Japanese text.
COLONS = (":", "：")
# The fewest words of a sentence an answer quotes on its own.
SHORTEST = 3
# A label and its value: "Default: 5", "Default:: `None`", "Type: int".
LABELLED_VALUE = re.compile(r"^[A-Z][\w ]{0,24}:{1,2}\s*\S")


def prose_units(text: str) -> list[str]:
    """The units an answer can quote: sentences of a passage's prose and of its list items, and the data rows
    of its tables (`table_rows`). Code blocks and headings are not answers by themselves."""
    return [unit for paragraph in paragraph_units(text) for unit in paragraph]


def paragraph_units(text: str) -> list[list[str]]:
    """`prose_units` grouped as the passage writes them: the sentences of one paragraph or of one list item
    together, each table row alone (a table's rows are separate records, not one text)."""
    return [list(paragraph) for paragraph in _paragraph_units(text)]


@functools.lru_cache(maxsize=2048)
def _paragraph_units(text: str) -> tuple[tuple[str, ...], ...]:
    """`paragraph_units`, kept for the passages read last: an answer splits each of its passages several times
    (coverage, the ranker's texts, their headings and passage scores, the span to quote), and a server reads the
    same passages again for other questions. Tuples, so no caller can change what the next one reads."""
    text = _FENCE.sub(" ", text)
    paragraphs: list[tuple[str, ...]] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.splitlines() if not ln.lstrip().startswith("#")]
        # A block can hold prose and a table with no blank line between them: each run is read as what it is.
        for is_table, run in itertools.groupby(lines, key=lambda ln: ln.lstrip().startswith("|")):
            if is_table:
                paragraphs.extend((row,) for row in table_rows(list(run)))
                continue
            for item in item_runs(list(run)):
                sentences = _completed(split_sentences(item_text(item)))
                if sentences:
                    paragraphs.append(sentences)
    return tuple(paragraphs)


def _completed(sentences: Sequence[str]) -> tuple[str, ...]:
    """The sentences of a paragraph that can be quoted: those of at least `SHORTEST` words, each with the labelled
    values after it. A shorter sentence that labels a value ("Default: 5", "Type: int") completes the sentence
    before it ("How many codes to generate. Default: 5"): alone it is no answer, and dropped, the value was lost to
    every answer. Other fragments ("If.", "Example:") are dropped, as is a labelled value that opens its paragraph."""
    kept: list[str] = []
    for sentence in sentences:
        if words_in(sentence) >= SHORTEST:
            kept.append(sentence)
        elif kept and LABELLED_VALUE.match(sentence):
            kept[-1] = f"{kept[-1]} {sentence}"
    return tuple(kept)


def item_runs(lines: Sequence[str], nested: bool = False) -> list[list[str]]:
    """Lines grouped so that each list item, its bullet line and the lines continuing it, is a run of its own
    (the lines before the first item are one run too). A nested item continues its parent's run ("Strawberry",
    then "With docs for FastAPI" under it), unless `nested`, where it is a run of its own."""
    runs: list[list[str]] = []
    top: int | None = None  # the indent of the list's outermost items
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if LIST_ITEM.match(line) and (nested or top is None or indent <= top):
            top = indent if top is None else min(top, indent)
            runs.append([line])
        elif runs:
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def item_text(lines: Sequence[str]) -> str:
    """The text of a run of lines (an item's without its bullet) on one line, without markup: a quote in a
    note (`> ...`) loses its `>` on every line."""
    return " ".join(plain("\n".join(LIST_ITEM.sub("", ln, count=1) for ln in lines)).split())


def plain(text: str) -> str:
    """Text without emphasis and code markup; links keep their text, and a code span its content as written.

    Inside a code span, `*` and `_` are the code's own (a glob `**/*.md`, a cron `0 3 * * *`, `**kwargs`,
    `__init__.py`), and an answer quoting the span without them would say something the page does not. So
    spans are set aside while the markup outside them is removed, then put back: without their ticks when
    the content has no markup characters (`RAGLINE_PORT` reads RAGLINE_PORT), with them otherwise, so that
    reading the result again (CRAG's strips are units read a second time) leaves it as it is."""
    spans: list[str] = []

    def aside(match: re.Match[str]) -> str:
        code = match.group(2)
        if len(code) > 2 and code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]  # CommonMark drops one space on each side
        spans.append(code if _MARKUP.sub("", code) == code else _ticked(code))
        return chr(_SPAN_MARK + len(spans) - 1)

    def back(match: re.Match[str]) -> str:
        at = ord(match.group(0)) - _SPAN_MARK
        return spans[at] if at < len(spans) else match.group(0)  # a page's own private-use character stays

    stripped = _MARKUP.sub("", CODE_SPAN.sub(aside, _LINK.sub(r"\1", text)))
    return _SPAN_MARKS.sub(back, stripped) if spans else stripped


def _ticked(code: str) -> str:
    """`code` as a code span again: in more ticks than any run inside it, with a space each side when it
    starts or ends with a tick (`` ` `` for a lone tick)."""
    ticks = "`" * (max((len(run) for run in _TICKS.findall(code)), default=0) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def table_rows(lines: Sequence[str]) -> list[str]:
    """A Markdown table's data rows, each one unit: its non-empty cells joined by " | ", which is how the row
    reads in the source with the markup gone, so a quote of it is still found in its chunk.

    Reference pages keep their facts in tables (a setting, its meaning, its default): left out, a question
    about a setting was answered from the prose around the table, or not at all. The header row (above the
    `|---|` rule) names columns, not facts, and is left out; a row of a table without a rule is kept."""
    rule = next((i for i, ln in enumerate(lines) if _TABLE_RULE.match(ln)), -1)
    rows = []
    for line in lines[rule + 1 :]:
        cells = [plain(cell).replace("\\|", "|").strip() for cell in _CELL_BREAK.split(line.strip().strip("|"))]
        cells = [cell for cell in cells if cell]
        if words_in(" ".join(cells)) >= 3:  # the bars are not words: "9.4.0 | 18.4.0" is too short
            rows.append(" | ".join(cells))
    return rows


def words_in(sentence: str) -> float:
    """About how many words a sentence has: white space separates them, except in Chinese and Japanese,
    written without spaces, where a word is about two characters. ("仪表板默认监听端口 7420。" is one
    sentence of several words, not two.)"""
    runs = CJK_RUN.findall(sentence)
    return len(CJK_RUN.sub(" ", sentence).split()) + sum(len(run) for run in runs) / 2


def introduced(text: str) -> dict[str, str]:
    """The blocks of `text` that a unit introduces, by that unit: the fenced code block or the list right after
    a paragraph whose last unit ends with a colon, as `text` has it. A code block with HTML in it is left out:
    the docs' rendered terminal sessions (colours as `<font>` tags) are not code a reader can copy."""
    found: dict[str, str] = {}
    fences = list(_FENCE.finditer(text))
    for fence in fences:
        block = fence.group(0)
        if block.endswith(fence.group(1)) and not _HTML_TAG.search(block):  # not cut by the chunk's end
            indent = text[text.rfind("\n", 0, fence.start()) + 1 : fence.start()]
            # A block inside a list item is indented with it: shown on its own, it reads from the margin.
            _introduce(found, text, fence.start(), textwrap.dedent(indent + block) if not indent.strip() else block)
    inside = [(f.start(), f.end()) for f in fences]
    offset, previous = 0, ""
    lines = text.split("\n")
    at = 0
    while at < len(lines):
        line, start = lines[at], offset
        in_code = any(a <= start < b for a, b in inside)
        if (
            not in_code
            and LIST_ITEM.match(line)
            and not LIST_ITEM.match(previous)
            and not previous.startswith((" ", "\t"))
        ):
            end = _list_end(lines, at)
            _introduce(found, text, start, "\n".join(lines[at:end]).rstrip())
            offset += sum(len(ln) + 1 for ln in lines[at:end])
            previous, at = lines[end - 1], end
            continue
        offset += len(line) + 1
        previous, at = line, at + 1
    return found


BLOCK_READ_CHARS = 400  # of an introduced block, what is read with its unit: about one cross-encoder candidate


@functools.lru_cache(maxsize=256)
def block_readings(text: str) -> Mapping[str, str]:
    """Each unit of `text` that introduces a block (`introduced`), as read with that block: the unit, then the
    block's text without its fences, at most `BLOCK_READ_CHARS` characters of it. "By default these are
    enabled:" answers a question only with what follows it; read alone it shares few of the question's words.
    Kept for the last passages read: the answer and its sentence ranker read the same passages' blocks (do not
    change what it returns)."""
    readings: dict[str, str] = {}
    for unit, block in introduced(text).items():
        shown = " ".join(_FENCE_MARK.sub(" ", " ".join(block_parts(block))).split())
        readings[unit] = f"{unit} {shown[:BLOCK_READ_CHARS]}".rstrip()
    return readings


def _introduce(found: dict[str, str], text: str, start: int, block: str) -> None:
    """Record `block` (at `start`) under the unit right above it, when that unit ends with a colon."""
    above = prose_units(re.split(r"\n\s*\n", text[:start].rstrip())[-1])
    if above and above[-1].endswith(COLONS):
        found.setdefault(above[-1], block)


def _list_end(lines: Sequence[str], first: int) -> int:
    """Where the list starting at line `first` ends: at a heading, or at a line of text at the margin after a
    blank line (a new paragraph); indented lines, code and blank lines between items belong to it."""
    end, blank, fence = first + 1, False, None
    for at in range(first + 1, len(lines)):
        line = lines[at]
        opening = _OPENING_FENCE.match(line)
        if fence is not None:
            fence = None if opening and opening.group(1) == fence else fence
        elif not line.strip():
            blank = True
            continue
        elif line.startswith("#") or (blank and not LIST_ITEM.match(line) and not line[0].isspace()):
            break  # a new paragraph (or code) at the margin after a blank line: no longer the list
        elif opening:
            fence = opening.group(1)
        blank = False
        end = at + 1
    return end


def block_parts(block: str) -> list[str]:
    """An introduced block as the answer shows it: a code block whole; a list one part per item, the item
    without its markup after a "-" or its number (a nested item is shown at the top level), and each code
    block inside the list whole, dedented."""
    if _FENCE.match(block):
        return [block]
    parts: list[str] = []
    for is_code, run in _code_and_text(block):
        if is_code:
            code = textwrap.dedent(run)
            if code.rstrip().endswith(("```", "~~~")) and not _HTML_TAG.search(code):
                parts.append(code.strip())
            continue
        for item in item_runs([ln for ln in run.split("\n") if ln.strip()], nested=True):
            bullet = LIST_ITEM.match(item[0])
            text = item_text(item)
            if bullet and text:
                mark = bullet.group(1)
                parts.append(f"{'-' if mark in '-*+' else mark} {text}")
            elif text and parts and not _FENCE.match(parts[-1]):  # a paragraph inside an item continues it
                parts[-1] += " " + text
            elif text:
                parts.append(text)
    return parts


def _code_and_text(block: str) -> list[tuple[bool, str]]:
    """`block` cut into its fenced code blocks (fence lines included, indented as written) and the text between."""
    pieces, at = [], 0
    for fence in _FENCE.finditer(block):
        start = block.rfind("\n", 0, fence.start()) + 1  # the fence's line, with its indent
        pieces.append((False, block[at:start]))
        pieces.append((True, block[start : fence.end()]))
        at = fence.end()
    pieces.append((False, block[at:]))
    return [(is_code, piece) for is_code, piece in pieces if piece.strip()]
