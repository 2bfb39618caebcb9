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
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

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
        elif tag in _BLOCKS:
            self._emit("\n\n")

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
        around = self._stack if closing else self._stack[:-1]
        parent = next((tag for tag, _, _ in reversed(around) if tag in _BLOCKS or tag == "pre"), None)
        return parent == "li"

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
        if self._cell is not None:
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
    lines = [line.rstrip() if line.startswith((" ", "\t")) else line.strip() for line in raw.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    h1 = re.search(r"^# (.+)$", text, re.M)
    title = (h1.group(1) if h1 else " ".join(parser.title.split())).strip()
    return text, title
