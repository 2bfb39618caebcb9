"""MyST Markdown (Sphinx's Markdown) to the CommonMark the Markdown cleaner reads, as Sphinx shows the page.

MyST writes roles as "{func}`structlog.get_logger`" and directives as fences named in braces ("```{note}",
":::{warning}", "```{doctest}"). Read as plain Markdown, a role leaves "{class}~contextvars.Token" in a quoted
answer, an admonition becomes a code block whose prose no answer quotes, and a `toctree` or an `include` becomes a
code block of file names. Here each reads as it does on the built page, with the reStructuredText reader's tables
of directives (pipelines/ingestion/rst_text.py), so a project's Markdown and reStructuredText pages read alike:
roles as their text (code, or prose for a page, a reference or a term), admonitions and version notes as a labelled paragraph, code directives as code blocks,
`eval-rst` through the reStructuredText reader, and what a reader never sees (toctree, include, images, doctest
set-up, diagrams, comments, link targets) dropped. Plain Markdown without any of this passes unchanged.
"""

from __future__ import annotations

import re

from pipelines.ingestion.rst_text import (
    ADMONITIONS,
    BODY_ONLY,
    CODE_DIRECTIVES,
    UNSEEN,
    VERSION_NOTES,
    rst_to_markdown,
    shown_role,
)

# A directive fence: "```{name} argument" or ":::{name} argument" (three or more, any indent).
_DIRECTIVE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\{([\w:-]+)\}\s*(.*?)\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# A role: "{meth}`~Request.get`" reads "`get`", "{doc}`Title <page>`" reads "Title", "{class}`!Name`" reads "`Name`".
_ROLE = re.compile(r"\{([\w:.-]+)\}`([~!]?)([^`<]*?)\s*(?:<[^>]*>)?`")
# A page's label for cross-references, "(target)=", and a comment line, "% text": neither is shown.
_TARGET = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
_COMMENT = re.compile(r"^\s*%")
# Directives a reader does not see in MyST pages beyond those of reStructuredText: doctest set-up and clean-up
# (Sphinx hides them), diagrams drawn from their source, and the changelog's generated entries.
_HIDDEN = {"testsetup", "testcleanup", "mermaid", "graphviz", "towncrier-draft-entries"}
_SHOWN_BODY = BODY_ONLY | {"figure", "glossary"}  # a figure's caption; a glossary's terms and definitions


def uses_myst(text: str) -> bool:
    return bool(_ROLE.search(text) or any(_DIRECTIVE.match(line) for line in text.splitlines()))


def myst_to_markdown(text: str) -> str:
    """The page with its MyST roles and directives as Sphinx shows them; unchanged when it has none."""
    if not uses_myst(text):
        return text
    return "\n".join(_lines(text.splitlines()))


def role_text(line: str) -> str:
    return _ROLE.sub(lambda m: shown_role(m[1], m[2], m[3]), line)


def _lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    fence = ""  # the marker of the plain code block we are in
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence:
            out.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            i += 1
            continue
        directive = _DIRECTIVE.match(line)
        if directive:
            indent, marker, name, argument = directive.groups()
            body, i = _body(lines, i + 1, marker)
            out.extend(_directive(indent, name, argument, _dedented(body, indent)))
            continue
        plain = _FENCE.match(line)
        if plain:
            fence = plain.group(1)
        elif _TARGET.match(line) or _COMMENT.match(line):
            i += 1
            continue
        else:
            line = role_text(line)
        out.append(line)
        i += 1
    return out


def _body(lines: list[str], start: int, marker: str) -> tuple[list[str], int]:
    """The directive's lines up to the fence that closes it (the same character, at least as many), options
    (":key: value" lines, or a "---" block of them) left out; and the index after the closing fence."""
    i = start
    body: list[str] = []
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped and not stripped.strip(marker[0]) and len(stripped) >= len(marker):
            i += 1
            break
        body.append(lines[i])
        i += 1
    if body and body[0].strip() == "---":
        end = next((n for n in range(1, len(body)) if body[n].strip() == "---"), 0)
        body = body[end + 1 :] if end else body
    while body and re.match(r"^\s*:[\w-]+:", body[0]):
        body = body[1:]
    return body, i


def _dedented(body: list[str], indent: str) -> list[str]:
    return [b[len(indent) :] if b.startswith(indent) else b.lstrip() for b in body]


def _directive(indent: str, name: str, argument: str, body: list[str]) -> list[str]:
    """What the page shows of one directive, at its indent (inside a list item it stays in the item)."""
    short = name.rsplit(":", 1)[-1]
    shown: list[str]
    if short in _HIDDEN or short in UNSEEN:
        shown = []
    elif short in CODE_DIRECTIVES:
        language = argument if short in ("code-block", "code", "sourcecode") else ""
        shown = [f"```{language}", *body, "```"]
    elif short == "eval-rst":
        shown = rst_to_markdown("\n".join(body))[0].strip("\n").split("\n")
    elif short in ADMONITIONS or short == "admonition":
        label = role_text(argument) if short == "admonition" else short.capitalize()
        title = "" if short == "admonition" else role_text(argument)
        shown = [f"**{label}:** {title}".rstrip(), *_lines(body)]
    elif short in VERSION_NOTES:
        version, _, said = argument.partition(" ")
        note = f"{VERSION_NOTES[short]} {version.strip()}"
        shown = [note + (f": {role_text(said.strip())}" if said.strip() else (":" if body else ".")), *_lines(body)]
    elif short.startswith("auto"):
        shown = [f"`{argument}`"]
    elif short in _SHOWN_BODY:
        shown = _lines(body)
    else:  # a signature or a title, then its text
        shown = [role_text(argument), *_lines(body)] if argument else _lines(body)
    return ["", *(f"{indent}{s}" if s else s for s in shown), ""] if shown else []
