"""HTML pages to Markdown with the standard library's parser: the main content only.

Boilerplate goes: `nav`, `header`, `footer`, `aside`, `script`, `style`, `form`, `noscript`, and any
element whose id, class or role has a word that starts with a name of navigation, breadcrumbs, sidebars,
cookie banners, feedback widgets or heading permalinks. When the page marks its main content (`<main>`,
`<article>`, or an element with `role="main"` or `itemprop="articleBody"`, as Sphinx's themes write it), only that
is kept, and the hints are read inside it only: the Read the Docs theme names its page body `wy-body-for-nav` and
the wrappers of its content `wy-nav-content`, which read as navigation and once dropped every page. Inside the main
content, what Docutils writes as an aside (a `.. sidebar::`, a `.. topic::`, a footnote or a citation:
`<aside class="sidebar">` since Docutils 0.18) is the page's own text and is kept; an aside outside it is a theme's.

Lists keep their shape: each item is one `- ` line, indented two spaces per level of nesting, and the paragraphs
an item wraps (Sphinx writes `<li><p>...</p></li>`) stay on its bullet line, a later one on an indented line of the
same item; a list nested in an item follows the item's line with no blank line between. Read as paragraphs, an
item's text came out as a lone "-" and a paragraph, and a sentence announcing a list ("... three hook runners:")
no longer had the list after it.

Definition lists keep each entry's subject: a term (`<dt>`) is written before the first paragraph of its
description (`<dd>`), "`term` - description", and a one-line paragraph of under three words ("Default: `5`") goes on
the paragraph it completes; the description's other paragraphs stay apart. API and settings references are written
so (Sphinx's `<dl class="py data">`, option and field lists): read as paragraphs, the term was a line of its own,
the sentence an answer quoted from the description never named the setting or function it described, and the
default stood in a paragraph of two words no answer quotes. A term longer than `definitions.TERM_LIMIT` characters
stays a paragraph of its own, every word of it in the index, and its name, when it is a signature ("name(...)"), is
the subject; a term whose description opens with a block (a list, code, a note) rather than prose is a paragraph of
its own, and one whose description opens with a field list ("Parameters") is the subject of the paragraph after it
(docs/decisions/definition-lists.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

from pipelines.ingestion.definitions import is_long, shown_term, term_text

# Between two paragraphs of a description: one paragraph break, unless the second is a fragment (one line of fewer
# than three words, "Default: `5`"), which goes on the line after the paragraph it completes.
_BREAK = "\n\x03\n"
_FRAGMENT_BREAK = re.compile(r"\n\x03\n(?=([^\n]*)(?:\n\n|\n\x03\n|\Z))")

_DROP_TAGS = {"nav", "header", "footer", "aside", "script", "style", "form", "noscript", "svg", "button", "template"}
# A hint names boilerplate when a word of an element's class, role or id starts with it ("navbar", "bd-sidebar",
# "pst-skip-link"), never when it sits inside a word: "generating" holds "rating", "protocol" holds "toc".
# `headerlink` is the permalink sign ("#", "¶") Sphinx and MkDocs put after a heading.
_DROP_HINTS = re.compile(
    r"(?<![a-z0-9])(?:nav|menu|breadcrumb|sidebar|toc|cookie|feedback|rating|helpful|footer|banner|skip|headerlink)",
    re.I,
)
# The id of a section, a heading or a definition term is a slug of its own text (Sphinx writes
# `<section id="skipping-tests">`, API docs `<dt id="pkg.module.name">`): content, never read for hints.
_TEXT_IDS = {"section", "h1", "h2", "h3", "h4", "h5", "h6", "dt"}
# An element that marks the page's main content (`role="main"`, `itemprop="articleBody"`), besides main and article.
_MAIN_MARK = re.compile(r"""<(?:main|article)\b|\brole\s*=\s*["']main["']|\bitemprop\s*=\s*["']articleBody["']""", re.I)
# Docutils' body elements written as `<aside>` (or, before 0.18, as a `<div>` of that class): content of the page.
_CONTENT_ASIDES = {"sidebar", "topic", "footnote", "footnote-list", "citation", "citation-list"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
_BLOCKS = {"p", "div", "section", "li", "dt", "dd", "blockquote", "tr", "table", "ul", "ol", "dl", "figure"}
_LISTS = {"ul", "ol"}
# Inside an item, these are its text and its nested lists; any other block (a table, a quote) is read as a block.
_ITEM_FLOW = {"p", "ul", "ol"}


def looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or ("<body" in head and "</" in text)


@dataclass
class _Description:
    """An open `<dd>`: the term waiting to be its first paragraph's subject, and whether a paragraph started."""

    term: str | None
    started: bool = False


class _Converter(HTMLParser):
    def __init__(self, marked: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.marked = marked  # the page marks its main content: hints are read inside it only
        self.out: list[str] = []
        self.title = ""
        self._skip = 0  # depth inside dropped elements
        self._stack: list[tuple[str, bool, bool]] = []  # (tag, dropped, marks the main content)
        self._pre = False
        self._in_title = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._rows = 0
        self.main_depth = 0
        self.has_main = False
        self._items: list[bool] = []  # per open list item: has its first paragraph started
        self._term: list[str] | None = None  # the text of the definition term being read
        self._pending: str | None = None  # a term read, its description not yet opened
        self._descriptions: list[_Description] = []  # the open descriptions, innermost last

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br" and not self._skip:
                self._emit("\n")
            return
        read = ("class", "role") if tag in _TEXT_IDS else ("id", "class", "role")
        names = " ".join(v or "" for k, v in attrs if k in read)
        main = tag in ("main", "article") or any(
            (k == "role" and (v or "").strip().lower() == "main") or (k == "itemprop" and v == "articleBody")
            for k, v in attrs
        )
        hinted = bool(names and _DROP_HINTS.search(names)) and not main and tag not in ("body", "html")
        classes = {c for k, v in attrs if k == "class" for c in (v or "").split()}
        aside = self.marked and self.main_depth > 0 and bool(classes & _CONTENT_ASIDES)  # Docutils', in the content
        drop = not aside and (tag in _DROP_TAGS or (hinted and (not self.marked or self.main_depth > 0)))
        self._stack.append((tag, drop, main))
        if drop:
            self._skip += 1
        if self._skip:
            return
        self._describe(tag, attrs)
        if tag == "title":
            self._in_title = True
        elif main:
            self.has_main = True
            self.main_depth += 1
            self._emit("\n\x01")  # where the main content starts
        elif re.fullmatch(r"h[1-6]", tag):
            self._emit("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "pre":
            self._pre = True
            self._emit("\n\n```\n")
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag == "li":
            self._emit("\n" + "  " * max(self._depth() - 1, 0) + "- ")
            self._items.append(False)
        elif tag in _ITEM_FLOW and self._in_item():
            if tag == "p" and self._items[-1]:
                self._emit("\n" + "  " * self._depth())  # a later paragraph of the item, on a line of its own
            if tag == "p":
                self._items[-1] = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag == "dt":
            self._flush_term()
            self._term = []
        elif tag == "dd":
            self._descriptions.append(_Description(self._pending))
            self._pending = None
        elif tag == "p" and self._in_description():
            described = self._descriptions[-1]
            # a later paragraph of the description: a break that `html_to_markdown` reads (`_FRAGMENT_BREAK`)
            self._emit(_BREAK if described.started else "\n\n" + self._subject())
            described.started = True
        elif tag in _BLOCKS:
            self._emit("\n\n")

    def _describe(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Before an element opens straight in a description whose term waits: a block other than a paragraph (a
        list, code, a note) writes the term as a paragraph of its own, except a field list (a function's
        "Parameters"), after which the term waits on for the description's first paragraph."""
        if not self._descriptions or self._descriptions[-1].term is None or not self._in_description():
            return
        if tag == "p" or not (tag in _BLOCKS or tag == "pre" or re.fullmatch(r"h[1-6]", tag)):
            return
        classes = {c for k, v in attrs if k == "class" for c in (v or "").split()}
        if tag == "dl" and "field-list" in classes:
            return
        term, self._descriptions[-1].term = self._descriptions[-1].term, None
        self._emit("\n\n" + term + "\n\n")
        self._descriptions[-1].started = True

    def _flush_term(self) -> None:
        """A term with no description after it (the first of two terms, a list that ends): a paragraph of its own."""
        if self._pending is not None:
            term, self._pending = self._pending, None
            self._emit("\n\n" + term + "\n\n")

    def _subject(self) -> str:
        """The description's waiting term as the subject of its first paragraph ("`term` - "), or nothing."""
        described = self._descriptions[-1]
        term, described.term = described.term, None
        return f"{term} - " if term else ""

    def _in_description(self, closing: bool = False) -> bool:
        """The element just opened (the top of the stack), or just closed (already off it), sits straight in a
        definition's description: the nearest block around it is a `dd`."""
        return bool(self._descriptions) and self._parent_block(closing) == "dd"

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        while self._stack:
            open_tag, dropped, main = self._stack.pop()
            if dropped:
                self._skip -= 1
            if not self._skip and not dropped:
                self._close(open_tag, main)
            if open_tag == tag:
                break

    def _depth(self) -> int:
        """Lists open around the current point (not counting dropped ones)."""
        return sum(1 for tag, dropped, _ in self._stack if tag in _LISTS and not dropped)

    def _in_item(self, closing: bool = False) -> bool:
        """The element just opened (the top of the stack), or just closed (already off it), sits directly in a
        list item's flow: the nearest block around it is an `li`."""
        return self._parent_block(closing) == "li"

    def _parent_block(self, closing: bool = False) -> str | None:
        """The nearest block around the element just opened (the top of the stack), or just closed (already off
        it)."""
        around = self._stack if closing else self._stack[:-1]
        return next((tag for tag, _, _ in reversed(around) if tag in _BLOCKS or tag == "pre"), None)

    def _close(self, tag: str, main: bool = False) -> None:
        if tag == "title":
            self._in_title = False
        elif main:
            self.main_depth -= 1
            self._emit("\x02")
        elif tag == "pre":
            self._pre = False
            self._emit("\n```\n\n")
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()).replace("|", "\\|"))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            line = "| " + " | ".join(self._row) + " |"
            if self._rows == 0:
                line += "\n|" + "---|" * len(self._row)
            self._rows += 1
            self.out.append("\n" + line)
            self._row = None
        elif tag == "table":
            self._rows = 0
            self._emit("\n\n")
        elif tag == "li":
            if self._items:
                self._items.pop()  # the next item starts its own line; the list's end or the next block a paragraph
        elif tag in _ITEM_FLOW and self._in_item(closing=True):
            return  # the item's line goes on: its next paragraph or nested list follows on the next line
        elif tag == "dt" and self._term is not None:
            whole = term_text("".join(self._term))
            term = shown_term(whole)
            self._term = None
            if is_long(whole):  # every word of a long term on a line of its own, as before; its name the subject
                self._emit("\n\n" + whole + "\n\n")
                if not term.startswith("\n"):
                    self._pending = term
            elif term:
                self._pending = term
        elif tag == "dd":
            described = self._descriptions.pop() if self._descriptions else None
            if described is not None and described.term is not None:  # a description of fields only
                self._emit("\n\n" + described.term)
            self._emit("\n\n")
        elif tag == "p" and self._in_description(closing=True):
            return  # what follows the description's paragraph is a break of its own (`_BREAK`) or the `dd`'s end
        elif re.fullmatch(r"h[1-6]", tag) or tag in _BLOCKS:
            self._emit("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        self._emit(data if self._pre else re.sub(r"\s+", " ", data))

    def _emit(self, text: str) -> None:
        if self._term is not None:
            self._term.append(text)
        elif (
            self._descriptions
            and self._descriptions[-1].term is not None
            and text.strip()
            and self._in_description(closing=True)
        ):
            # prose straight in the description, in no paragraph (`<dd>text</dd>`): the term is its subject
            self._descriptions[-1].started = True
            self._emit(self._subject())
            self._emit(text)
        elif self._cell is not None:
            self._cell.append(text)
        else:
            self.out.append(text)


def html_to_markdown(html: str) -> tuple[str, str]:
    """Return (Markdown text, title). The title is the first `h1`, else `<title>`."""
    parser = _Converter(marked=bool(_MAIN_MARK.search(html)))
    parser.feed(html)
    parser.close()
    raw = "".join(parser.out)
    if parser.has_main:
        raw = "\n\n".join(re.findall(r"\x01(.*?)(?:\x02|$)", raw, re.S))
    raw = raw.replace("\x01", "").replace("\x02", "")
    raw = _FRAGMENT_BREAK.sub(lambda m: "\n" if len(m.group(1).split()) < 3 else "\n\n", raw)
    raw = raw.replace(_BREAK, "\n\n").replace("\x03", "")  # a break inside a table cell is gone with it
    lines = [line.rstrip() if line.startswith((" ", "\t")) else line.strip() for line in raw.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    h1 = re.search(r"^# (.+)$", text, re.M)
    title = (h1.group(1) if h1 else " ".join(parser.title.split())).strip()
    return text, title
