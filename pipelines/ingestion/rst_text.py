"""reStructuredText basics to Markdown: section titles (levels in order of first use, as docutils does),
`.. code-block::` / `::` literal blocks and other directives whose body is code (`CODE_DIRECTIVES`, in any
domain), admonitions, and inline markup (``code``, roles, links)."""

from __future__ import annotations

import re

from pipelines.ingestion.definitions import described

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
# A comment (".. text") or a link target (".. _name:"): whatever starts with ".. " and is no directive.
_COMMENT = re.compile(r"^\.\.(\s|$)")
# A directive, its name possibly in a domain (`py:function`, a Sphinx extension's `click:example`).
_DIRECTIVE = re.compile(r"^\.\.\s+((?:[\w-]+:)*[\w-]+)::\s*(.*)$")
# Directives whose body is code, by their name without its domain: docutils' and Sphinx's own, and the names
# Sphinx extensions give their code examples (`click:example`, `click:run`, `ipython`, `jupyter-execute`, sphinx-tabs'
# `code-tab`).
CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "literal", "doctest", "testcode", "testsetup", "testoutput",
                    "ipython", "jupyter-execute", "example", "run", "parsed-literal", "code-tab"}  # fmt: skip
ADMONITIONS = {"note", "tip", "warning", "important", "caution", "danger", "hint", "attention", "seealso"}
# Directives a reader sees nothing of (settings of the page, or content from a file we do not have).
UNSEEN = {"toctree", "contents", "index", "meta", "raw", "include", "only", "currentmodule", "module", "highlight",
           "rst-class", "image", "literalinclude", "sectionauthor", "moduleauthor", "default-role", "tabularcolumns"}  # fmt: skip
# Directives whose argument is a condition or a class, not text: their body alone is shown.
BODY_ONLY = {"ifconfig", "class", "container", "tabs", "tab", "group-tab"}
# Directives that describe an object of a domain (`py:function`, `confval`, by their name without the domain): the
# argument (a name, a signature) is the subject of the body (`definitions.described`).
OBJECTS = {"data", "attribute", "function", "method", "class", "exception", "decorator", "decoratormethod",
           "classmethod", "staticmethod", "property", "confval", "envvar", "option", "describe", "object", "type",
           "var", "member", "macro"}  # fmt: skip
# What Sphinx writes before a version note's text.
VERSION_NOTES = {"versionadded": "Added in version", "version-added": "Added in version",
                  "versionchanged": "Changed in version", "version-changed": "Changed in version",
                  "deprecated": "Deprecated since version", "version-deprecated": "Deprecated since version",
                  "versionremoved": "Removed in version", "version-removed": "Removed in version"}  # fmt: skip


# A role: ":ref:`Title <target>`" reads "Title"; Sphinx shows ":meth:`~Request.get`" as its last part, "get",
# and ":class:`!Name`" (a role that links nowhere) as "Name".
_ROLE = re.compile(r":((?:[\w-]+:)*[\w-]+):`([~!]?)([^`<]*?)\s*(?:<[^>]*>)?`")
# Roles Sphinx shows as prose (a page's title, a glossary term, a PEP); every other role (an object of a domain,
# an option, a file, a command) it shows as code, and so does the text here: as code `__version_info__` keeps its
# underscores, which the Markdown reader would otherwise take for emphasis.
PROSE_ROLES = frozenset({"doc", "ref", "term", "numref", "download", "abbr", "pep", "rfc", "guilabel", "menuselection",
                         "sub-ref", "index", "emphasis", "strong", "title-reference", "math", "dfn"})  # fmt: skip


def shown_role(name: str, mark: str, target: str) -> str:
    """One role as Sphinx shows it: "~" keeps the target's last part; code unless a prose role."""
    text = target.rsplit(".", 1)[-1] if mark == "~" else target
    return text if name.rsplit(":", 1)[-1] in PROSE_ROLES or not text or "`" in text else f"`{text}`"


def role_text(text: str) -> str:
    """Roles as Sphinx shows them (`_ROLE`, `shown_role`)."""
    return _ROLE.sub(lambda m: shown_role(m[1], m[2], m[3]), text)


def _inline(text: str) -> str:
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    text = role_text(text)
    # As in reStructuredText, a reference's text starts and ends with a non-space: the space between two code
    # spans ("`attr` module has an `__version_info__`") is no reference.
    text = re.sub(r"`(?!\s)([^`<]+?)\s*<([^>]+)>`_{1,2}", r"[\1](\2)", text)  # `text <url>`_ -> [text](url)
    return re.sub(r"`(?!\s)([^`]+)(?<!\s)`_{1,2}", r"\1", text)


def rst_to_markdown(text: str) -> tuple[str, str]:
    lines = text.splitlines()
    out: list[str] = []
    levels: list[str] = []
    title = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        # Overlined titles: a line of marks, the title, the same marks.
        if _UNDERLINE.match(line) and i + 2 < len(lines) and _UNDERLINE.match(lines[i + 2]) and lines[i + 1].strip():
            line, nxt, i = lines[i + 1], lines[i + 2], i + 1
        if (
            line.strip()
            and _UNDERLINE.match(nxt)
            and len(nxt.strip()) >= len(line.strip())
            and not line.startswith(" ")
        ):
            mark = nxt.strip()[0]
            if mark not in levels:
                levels.append(mark)
            name = _inline(line.strip())
            title = title or name
            out.extend(["", "#" * min(6, levels.index(mark) + 1) + " " + name, ""])
            i += 2
            continue
        if _COMMENT.match(line) and not _DIRECTIVE.match(line.strip()):  # a comment or a link target, unseen
            _, i = _indented_block(lines, i + 1, _indent(line))
            continue
        if line.startswith(">>> ") and (not out or not out[-1].strip()):  # a doctest block: code until a blank line
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            out.extend(["```", *lines[i:end], "```", ""])
            i = end
            continue
        directive = _DIRECTIVE.match(line.strip())
        literal = line.rstrip().endswith("::") and not directive
        if directive or literal:
            name, argument = (directive.group(1), directive.group(2)) if directive else ("literal", "")
            body, i = _indented_block(lines, i + 1, _indent(line))
            if name.rsplit(":", 1)[-1] in CODE_DIRECTIVES:
                if literal:  # "text::" reads "text:", "text ::" reads "text", "::" alone nothing
                    said = line.rstrip()[:-2]
                    if said.strip():
                        out.append(_inline(said.rstrip() + ("" if said.endswith((" ", "\t")) else ":")))
                at = line[: _indent(line)]  # inside a list item, the block stays in the item
                fence = f"{at}```{argument.strip() if directive else ''}"
                out.extend(["", fence, *(f"{at}{b}" if b else b for b in body), f"{at}```", ""])
            elif name in ADMONITIONS or name == "admonition":  # `admonition` titles itself
                label = argument if name == "admonition" else f"{name.capitalize()}: {argument}"
                head, _, rest = label.partition(":")
                out.extend(["", f"**{_inline(head.strip())}:** {_inline(rest.strip())}".rstrip(), *_nested(body), ""])
            elif name in VERSION_NOTES:
                version, _, said = argument.partition(" ")
                note = f"{VERSION_NOTES[name]} {version.strip()}" + (
                    f": {_inline(said.strip())}" if said.strip() else (":" if body else ".")
                )
                out.extend(["", note, *_nested(body), ""])
            elif name.rsplit(":", 1)[-1].startswith("auto"):  # autodoc: the object's name; its text is in code
                out.extend(["", f"`{argument.strip()}`", ""])
            elif name in BODY_ONLY:
                out.extend(["", *_nested(body), ""])
            elif name.rsplit(":", 1)[-1] in OBJECTS and argument.strip():  # a name or a signature, then its text
                out.extend(["", *described(_inline(argument.strip()), _nested(body)), ""])
            elif name not in UNSEEN:  # a title, then its text, a paragraph of its own
                out.extend(["", _inline(argument), *_nested(body), ""])
            continue
        out.append(_inline(line.rstrip()))
        i += 1
    clean = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"
    return clean, title


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _nested(body: list[str]) -> list[str]:
    """A directive's body read as reStructuredText of its own (it may hold directives, code and lists)."""
    return rst_to_markdown("\n".join(body))[0].strip("\n").split("\n") if any(b.strip() for b in body) else []


def _indented_block(lines: list[str], start: int, within: int = 0) -> tuple[list[str], int]:
    """The block indented deeper than `within` (the indent of the line that opens it) after a directive (options
    like `:linenos:` skipped), dedented; and where it ends. A literal block inside a list item ends where the
    item's own text resumes."""
    i = start
    while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
        i += 1
    block: list[str] = []
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > within):
        block.append(lines[i])
        i += 1
    while block and not block[-1].strip():
        block.pop()
    while block and not block[0].strip():
        block.pop(0)
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    return [b[indent:] for b in block], i
