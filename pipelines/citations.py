"""Citation markers `[C:<chunk_id>]`, sentence splitting, and validation (DESIGN.md, Contracts).

A sentence is released only when it carries at least one marker and every marker names a chunk that
was supplied to the generator. A marker naming anything else fails the whole request: it means the
generator invented a source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MARKER = re.compile(r"\[C:([A-Za-z0-9_\-]+)\]")
_TERMINATORS = ".!?。！？।॥"
_WIDE = "。！？।॥"  # these end a sentence even with no space after them
_TRAILER = re.compile(r"[\"')\]]*((?:\s*\[C:[A-Za-z0-9_\-]+\])*)")


class CitationError(ValueError):
    """A marker names a chunk that was not supplied: the reply must not be released."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(f"citation names chunk(s) that were not supplied: {', '.join(unknown)}")
        self.unknown = unknown


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer, each keeping the markers that follow its terminator.

    ASCII terminators end a sentence only before white space (so `8.5` and `app.py` stay whole);
    CJK and Indic terminators end one wherever they stand.
    """
    sentences, start, i = [], 0, 0
    while i < len(text):
        char = text[i]
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


def markers(text: str) -> list[str]:
    return MARKER.findall(text)


def strip_markers(text: str) -> str:
    return re.sub(r"\s+([.!?。！？।॥])", r"\1", MARKER.sub("", text)).strip()


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


class UncitedAnswer(ValueError):
    """The generator answered, but no sentence could be tied to a supplied passage: nothing to release."""
