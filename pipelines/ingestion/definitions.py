"""Definitions as API and settings references write them: a term (a setting, a function's signature) and its
description. Both readers write the term as the subject of its description's first paragraph ("`term` - ..."), so a
sentence quoted from the description names what it describes (docs/decisions/definition-lists.md)."""

from __future__ import annotations

import re

# The longest term written before its description; a longer signature reads as its name.
TERM_LIMIT = 80
_SIGNATURE = re.compile(r"^((?:\w+\s+)*[^()\s]+)\s*\(.*\)\s*(?:->.*)?$", re.S)  # "class Name(...)"
# The link to a page's source Sphinx's viewcode puts in a signature.
_SOURCE_LINK = re.compile(r"\[source\]\s*$")
_CODE_LIKE = re.compile(r"[\w.:\-]+(?:\(.*\))?")


def term_text(raw: str) -> str:
    """A definition term as the page shows it, on one line and without the signature's source link."""
    return _SOURCE_LINK.sub("", " ".join(raw.split())).strip()


def is_long(term: str) -> bool:
    """Whether `term` is too long to be a subject whole (`shown_term` gives its name, or a line of its own)."""
    return len(term.replace("`", "")) > TERM_LIMIT


def shown_term(raw: str) -> str:
    """A definition term as the subject of its description: on one line, without the signature's source link,
    in code when it reads as a name or a signature. A term longer than `TERM_LIMIT` reads as its name when it is
    a signature; otherwise it comes back on a line of its own ("\n" first), to be written as its own paragraph."""
    term = term_text(raw)
    bare = term.replace("`", "")
    if is_long(bare):
        signature = _SIGNATURE.match(bare)
        if not signature or len(signature.group(1)) > TERM_LIMIT:
            return "\n" + term
        bare = signature.group(1) + "()"
    if not bare:
        return ""
    return f"`{bare}`" if _CODE_LIKE.fullmatch(bare.replace(" ", "")) and "`" not in bare else bare


# What opens a line of Markdown that is not prose: code, a list item, a heading, a table row, a quote, a note.
_NOT_PROSE = re.compile(r"^\s*(?:```|~~~|[-*+] |\d+[.)] |#|\||>|\*\*)")


def _prose(line: str) -> bool:
    return bool(line.strip()) and not _NOT_PROSE.match(line)


def described(term: str, body: list[str]) -> list[str]:
    """The Markdown lines of a definition: `term` as the subject of the description's first paragraph, and each
    paragraph of one short line ("Default: `None`", under three words) joined to the prose paragraph before it,
    the value completing the sentence it belongs to. A description that opens with anything but prose (code, a
    list, a note) keeps its term on a line of its own, followed by the description, as the readers wrote it before.
    A term that is no subject (`shown_term` gives a line of its own) stays as it was written."""
    subject = shown_term(term)
    if subject.startswith("\n") or not subject:
        return [term, *body]
    lines: list[str] = []
    for at, line in enumerate(body):
        nxt = body[at + 1] if at + 1 < len(body) else ""
        after = body[at + 2] if at + 2 < len(body) else ""
        fragment = _prose(nxt) and len(nxt.split()) < 3 and not after.strip()
        if not line.strip() and fragment and lines and _prose(lines[-1]):
            continue  # the short paragraph goes on the line after the one it completes
        lines.append(line)
    if lines and _prose(lines[0]):
        return [f"{subject} - {lines[0]}", *lines[1:]]
    return [term, *lines]
