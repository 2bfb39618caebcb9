"""Citation markers `[C:<chunk_id>]`, sentence splitting, and validation (DESIGN.md, Contracts).

A sentence is released only when it carries at least one marker and every marker names a chunk that
was supplied to the generator. A marker naming anything else fails the whole request: it means the
generator invented a source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipelines.text.markdown import LIST_ITEM

MARKER = re.compile(r"\[C:([A-Za-z0-9_\-]+)\]")
_TERMINATORS = ".!?。！？।॥"
_WIDE = "。！？।॥"  # these end a sentence even with no space after them
_TRAILER = re.compile(r"[\"')\]]*((?:\s*\[C:[A-Za-z0-9_\-]+\])*)")
# A fenced code block: its opening fence at the start of a line, through the same fence closing it (a model may
# write its marker on that line: "``` [C:x]"), or to the end of the text when nothing closes it yet.
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*(?:\n.*?^[ \t]*\1(?!`)[^\n]*$|.*\Z)", re.M | re.S)
# What may follow a closed block as its own: the markers citing it and a full stop, on its line or the next.
_AFTER_BLOCK = re.compile(r"[ \t]*(?:\n[ \t]*)?(?:\[C:[A-Za-z0-9_\-]+\][ \t]*)*[.!?]?")
# An abbreviation's full stop: after "e.g.", "i.e.", "vs." and "cf." a sentence goes on; after "etc." it ends
# only before a capital letter ("... logs, metrics, etc. The server ..." ends there; "e.g. FastAPI" does not).
_ABBREVIATION = re.compile(r"(?<![\w.])(e\.g|i\.e|etc|vs|cf)\.\Z", re.I)
_NEXT_CHAR = re.compile(r"\s*(\S?)")


class CitationError(ValueError):
    """A marker names a chunk that was not supplied: the reply must not be released."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(f"citation names chunk(s) that were not supplied: {', '.join(unknown)}")
        self.unknown = unknown


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer, each keeping the markers that follow its terminator.

    ASCII terminators end a sentence only before white space (so `8.5` and `app.py` stay whole);
    CJK and Indic terminators end one wherever they stand. The full stop of "e.g.", "i.e.", "vs." and "cf." ends
    no sentence, that of "etc." only one followed by a capital letter, and an ellipsis none followed by a
    lowercase word. A list item ("- ...", "1. ..." at the start of a
    line) is one sentence to the end of its line, its number and its inner full stops included: an answer
    shows each item on a line of its own, with its marker. A fenced code block is read whole, to its
    closing fence (or to the end of a text still arriving): a full stop inside code ends nothing. A closed
    block ends its sentence, with the markers and full stop that follow it, so an answer's code example is
    one piece with its citation and the text after it starts a sentence of its own.
    """
    fences = {m.start(): m.end() for m in _FENCED.finditer(text)}
    sentences, start, i = [], 0, 0
    while i < len(text):
        if i in fences:
            i = fences[i]
            if i < len(text):  # closed: the block and what cites it end the sentence
                i = _AFTER_BLOCK.match(text, i).end()  # type: ignore[union-attr]  # it matches the empty string
                sentences.append(text[start:i].strip())
                start = i
            continue
        char = text[i]
        if (i == 0 or text[i - 1] == "\n") and LIST_ITEM.match(text, i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            sentences.extend(piece for piece in (text[start:i].strip(), text[i:end].strip()) if piece)
            start = i = end
            continue
        if char == "." and _continues_after_abbreviation(text, i):
            i += 1
            continue
        if char in _TERMINATORS:
            trailer = _TRAILER.match(text, i + 1)
            end = trailer.end() if trailer else i + 1
            if char in _WIDE or end >= len(text) or text[end].isspace():
                piece = text[start:end].strip()
                if piece:
                    sentences.append(piece)
                start = i = end
                continue
        i += 1
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _continues_after_abbreviation(text: str, i: int) -> bool:
    """The full stop at `i` closes an abbreviation that does not end the sentence there, or an ellipsis
    followed by a lowercase word ("the ... means required", "a message (... is not a text document)")."""
    if text[max(0, i - 2) : i + 1] == "...":
        following = _NEXT_CHAR.match(text, i + 1).group(1)  # type: ignore[union-attr]  # it matches the empty string
        return following.islower()
    found = _ABBREVIATION.search(text, max(0, i - 4), i + 1)
    if found is None:
        return False
    if found.group(1).lower() != "etc":
        return True
    following = _NEXT_CHAR.match(text, i + 1).group(1)  # type: ignore[union-attr]  # it matches the empty string
    return bool(following) and not following.isupper()


def join_sentences(sentences: Iterable[str]) -> str:
    """Sentences back into one text: by a space, but a code block on lines of its own, a blank line before and
    after it, so that Markdown shows it as code and `split_sentences` (which sees a fence only at the start of
    a line) gives the same sentences back; and a list item ("- ...", "1. ...") on a line of its own, the list
    set off by blank lines."""
    text, before = "", ""
    for sentence in sentences:
        kind = "block" if _FENCED.match(sentence) else "item" if LIST_ITEM.match(sentence) else ""
        if text:
            text += " " if kind == before == "" else "\n" if kind == before == "item" else "\n\n"
        text += sentence
        before = kind
    return text


def markers(text: str) -> list[str]:
    return MARKER.findall(text)


# The space a removed marker leaves before a sentence's stop. Not before a dot that starts a word: in
# "the method .add_task()" the space is the page's, and closing it made "method.add_task()", an
# identifier no page has (verification then found it missing from the cited passage).
_GAP_BEFORE_STOP = re.compile(r"\s+([。！？।॥]|[.!?](?![\w.]))")


def close_gaps(text: str) -> str:
    """The text without the space left before a stop where a marker stood."""
    return _GAP_BEFORE_STOP.sub(r"\1", text).strip()


def strip_markers(text: str) -> str:
    return close_gaps(MARKER.sub("", text))


@dataclass(frozen=True)
class ValidatedSentence:
    text: str
    chunk_ids: list[str]


def validate(answer: str, supplied: Iterable[str]) -> tuple[list[ValidatedSentence], list[str]]:
    """Return (released sentences, dropped sentences without a marker); raise on an unknown marker."""
    known = set(supplied)
    unknown = sorted({m for m in markers(answer) if m not in known})
    if unknown:
        raise CitationError(unknown)
    released, dropped = [], []
    for sentence in split_sentences(answer):
        cited = list(dict.fromkeys(markers(sentence)))
        if cited:
            released.append(ValidatedSentence(sentence, cited))
        else:
            dropped.append(sentence)
    return released, dropped
