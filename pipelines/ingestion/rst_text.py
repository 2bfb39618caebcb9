"""reStructuredText basics to Markdown: section titles (levels in order of first use, as docutils does),
`.. code-block::` / `::` literal blocks and other directives whose body is code (`_CODE_DIRECTIVES`, in any
domain), admonitions, and inline markup (``code``, roles, links)."""

from __future__ import annotations

import re

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
# A directive, its name possibly in a domain (`py:function`, a Sphinx extension's `click:example`).
_DIRECTIVE = re.compile(r"^\.\.\s+((?:[\w-]+:)*[\w-]+)::\s*(.*)$")
# Directives whose body is code, by their name without its domain: docutils' and Sphinx's own, and the names
# Sphinx extensions give their code examples (`click:example`, `click:run`, `ipython`, `jupyter-execute`).
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "literal", "doctest", "testcode", "testsetup", "testoutput",
                    "ipython", "jupyter-execute", "example", "run"}  # fmt: skip
_ADMONITIONS = {"note", "tip", "warning", "important", "caution", "danger", "hint", "attention", "seealso"}


# A role: ":ref:`Title <target>`" reads "Title"; Sphinx shows ":meth:`~Request.get`" as its last part, "get",
# and ":class:`!Name`" (a role that links nowhere) as "Name".
_ROLE = re.compile(r":[\w:-]+:`([~!]?)([^`<]*?)\s*(?:<[^>]*>)?`")


def role_text(text: str) -> str:
    """Roles as Sphinx shows them (`_ROLE`)."""
    return _ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] == "~" else m[2], text)


def _inline(text: str) -> str:
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    text = role_text(text)
    text = re.sub(r"`([^`<]+?)\s*<([^>]+)>`_{1,2}", r"[\1](\2)", text)  # `text <url>`_ -> [text](url)
    return re.sub(r"`([^`]+)`_{1,2}", r"\1", text)


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
        directive = _DIRECTIVE.match(line.strip())
        literal = line.rstrip().endswith("::") and not directive
        if directive or literal:
            name, argument = (directive.group(1), directive.group(2)) if directive else ("literal", "")
            body, i = _indented_block(lines, i + 1)
            if name.rsplit(":", 1)[-1] in _CODE_DIRECTIVES:
                if literal:
                    out.append(_inline(line.rstrip()[:-1].rstrip() + (":" if line.rstrip() != "::" else "")))
                out.extend(["", f"```{argument.strip() if directive else ''}", *body, "```", ""])
            elif name in _ADMONITIONS:
                out.extend(["", f"**{name.capitalize()}:** {_inline(argument)}".rstrip(), *map(_inline, body), ""])
            elif name not in ("toctree", "contents", "index", "meta", "raw", "include", "only"):
                out.extend([_inline(argument), *map(_inline, body)])
            continue
        out.append(_inline(line.rstrip()))
        i += 1
    clean = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"
    return clean, title


def _indented_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """The indented block after a directive (options like `:linenos:` skipped), dedented; and where it ends."""
    i = start
    while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
        i += 1
    block: list[str] = []
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
        block.append(lines[i])
        i += 1
    while block and not block[-1].strip():
        block.pop()
    while block and not block[0].strip():
        block.pop(0)
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    return [b[indent:] for b in block], i
