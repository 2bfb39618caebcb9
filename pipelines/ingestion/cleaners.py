"""Cleaners: source markup in, plain Markdown with titles and anchors out.

- Markdown (MkDocs / FastAPI style): front matter titles, `/// tip | Title` admonitions (and `////`
  tabs), `{ #anchor }` headings kept for the chunkers to turn into citation anchors, includes
  `{* ../../docs_src/x.py ln[3:9] hl[4] *}` and `{!> path!}` replaced by the file as a code block.
- Hugo: YAML front-matter titles, `{{< shortcodes >}}` (alerts and tabs become labels, the rest
  drop their tags and keep their content), `> [!note]` alerts.
- HTML: the main content only (navigation, headers, footers, scripts, feedback widgets removed),
  turned into Markdown headings, paragraphs, lists, code blocks and tables (`pipelines.ingestion.html_text`).
- reStructuredText: section titles, code blocks, admonitions and inline markup (`pipelines.ingestion.rst_text`).
- PDF: read to Markdown by the loader (`pipelines.ingestion.pdf_text`), a heading per page; kept as it is.
- Any other text file: plain text, titled by its first Markdown heading. `pipelines.settings.READ_FORMATS`
  names the endings the default include selects.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import structlog
import yaml  # type: ignore[import-untyped]

from pipelines.documents import Document
from pipelines.ingestion.html_text import html_to_markdown, looks_like_html
from pipelines.ingestion.myst_text import myst_to_markdown
from pipelines.ingestion.rst_text import rst_to_markdown

log = structlog.get_logger(__name__)

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ADMONITION_OPEN = re.compile(r"^/{3,}\s*([\w-]+)\s*(?:\|\s*(.*))?$")
_ADMONITION_CLOSE = re.compile(r"^/{3,}\s*$")
_INCLUDE = re.compile(r"^\{([*!])\s*>?\s*(.*?)\s*[*!]\}\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_SHORTCODE = re.compile(r"\{\{[<%]\s*(/?)([\w-]+)(.*?)\s*[%>]\}\}")
_ALERT = re.compile(r"^>\s*\[!(\w+)\]\s*(.*)$")
_LINES = re.compile(r"ln\[([\d:,\s]+)\]")
# Footnotes (Python-Markdown, MkDocs, MyST, GitLab): a reference `word[^label]` is a superscript number on the page,
# and a definition `[^label]: text` its note at the page's foot. The reader sees the note's text, not its label.
_FOOTNOTE_DEFINITION = re.compile(r"^(\s*)\[\^[^\]\s]+\]:[ \t]*")
_FOOTNOTE_REFERENCE = re.compile(r"[ \t]?\[\^[^\]\s]+\](?!:)")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".html": "html", ".toml": "toml",
              ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".sh": "bash", ".md": "markdown"}  # fmt: skip


def front_matter_title(front: str) -> str:
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        match = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", front, re.M)
        return match.group(1) if match else ""
    return str(data.get("title") or "") if isinstance(data, dict) else ""


def select_lines(text: str, spec: str) -> str:
    """`ln[3:9]` / `ln[1:3,8]` of an include: 1-based inclusive ranges."""
    lines = text.splitlines()
    out: list[str] = []
    for part in spec.split(","):
        start, _, end = part.strip().partition(":")
        first = int(start) if start else 1
        last = int(end) if end else (first if not _ else len(lines))
        out.extend(lines[first - 1 : last])
    return "\n".join(out)


def resolve_include(target: str, document_id: str, root: Path) -> Path | None:
    """The included file, looked up beside the page, then under the source root with leading `../` dropped
    (FastAPI's `../../docs_src/` is relative to a docs tree one level deeper than the corpus). Never
    outside the source root."""
    root = root.resolve()
    relative = Path(target)
    candidates = [root / Path(document_id).parent / relative]
    stripped = Path(*[p for p in relative.parts if p not in ("..", ".")]) if relative.parts else relative
    candidates.append(root / stripped)
    for candidate in candidates:
        path = candidate.resolve()
        if path.is_file() and path.is_relative_to(root):
            return path
    return None


def include_block(line: str, document_id: str, root: Path | None) -> list[str] | None:
    """The lines replacing an include directive, or None when the line is not one."""
    match = _INCLUDE.match(line.strip())
    if match is None:
        return None
    words = match.group(2).split()
    if not words:
        return []
    target, options = words[0], " ".join(words[1:])
    path = resolve_include(target, document_id, root) if root is not None else None
    if path is None:
        log.warning("include_not_found", document_id=document_id, target=target)
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    ranges = _LINES.search(options)
    if ranges:
        text = select_lines(text, ranges.group(1))
    return [f"```{_LANGUAGES.get(path.suffix, '')}", *text.rstrip("\n").splitlines(), "```"]


def shortcode_line(line: str) -> str | None:
    """A Hugo shortcode line: alerts and tabs become a label, other tags vanish (their content stays)."""

    def label(match: re.Match[str]) -> str:
        closing, name, args = match.groups()
        if closing:
            return ""
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', args))
        if name == "alert":
            return f"**{attrs.get('type', 'note').capitalize()}:**"
        if name == "tab" and "title" in attrs:
            return f"**{attrs['title']}:**"
        return ""

    if not _SHORTCODE.search(line):
        return None
    return _SHORTCODE.sub(label, line).strip()


_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")


def clean_markdown(text: str, document_id: str = "", root: Path | None = None) -> tuple[str, str]:
    """Return (clean text, title)."""
    title = ""
    front = _FRONT_MATTER.match(text)
    if front:
        title = front_matter_title(front.group(1))
        text = text[front.end() :]
    text = myst_to_markdown(_HTML_COMMENT.sub("", text))
    lines: list[str] = []
    in_fence, in_alert = False, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            lines.append(line)
            continue
        if in_fence:
            included = include_block(line, document_id, root)  # `{!path!}` inside a fence: the file's lines
            lines.extend(included[1:-1] if included is not None else [line.rstrip()])
            continue
        included = include_block(line, document_id, root)
        if included is not None:
            lines.extend(["", *included, ""] if included else [])
            continue
        admonition = _ADMONITION_OPEN.match(stripped)
        if admonition:
            label = (admonition.group(2) or admonition.group(1)).strip()
            lines.append(f"**{label[:1].upper() + label[1:]}:**")
            continue
        if _ADMONITION_CLOSE.match(stripped):
            continue
        alert = _ALERT.match(stripped)
        # An alert inside a list item keeps the item's indent: at the margin it would end the list there.
        indent = line[: len(line) - len(line.lstrip())]
        if alert:
            in_alert = True
            lines.append(f"{indent}**{alert.group(1).capitalize()}:** {alert.group(2)}".rstrip())
            continue
        if in_alert and stripped.startswith(">"):
            lines.append(indent + stripped[1:].strip())
            continue
        in_alert = False
        short = shortcode_line(line)
        if short is not None:
            lines.append(short)
            continue
        if "[^" in line:
            line = _without_footnote_marks(line)
        if _TABLE_DELIMITER.match(stripped):
            # `|-----...-----|` padded to the widest row: every dash is a token to the embedder's
            # tokenizer, so a wide table's header alone could fill a chunk. Markdown needs three.
            lines.append(re.sub(r"-{3,}", "---", line.rstrip()))
            continue
        heading = _HEADING.match(stripped)
        if heading and not title:
            title = re.sub(r"\s*\{\s*#[^}]*\}\s*$", "", heading.group(2))
        lines.append(line.rstrip())
    clean = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    return clean, title


def _without_footnote_marks(line: str) -> str:
    """The line without footnote labels: a definition keeps its note's text, a reference goes; code spans kept."""
    line = _FOOTNOTE_DEFINITION.sub(r"\1", line)
    out, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        out.append(_FOOTNOTE_REFERENCE.sub("", line[last : span.start()]))
        out.append(span.group(0))
        last = span.end()
    out.append(_FOOTNOTE_REFERENCE.sub("", line[last:]))
    return "".join(out)


def _first_heading(text: str) -> str:
    match = re.search(r"^#{1,6}\s+(.*?)\s*$", text, re.M)
    return re.sub(r"\s*\{\s*#[^}]*\}\s*$", "", match.group(1)) if match else ""


def clean_document(document: Document, root: Path | None = None) -> Document:
    """Clean one document by its kind (extension, or content for extension-less URL pages)."""
    doc_id = document.document_id.lower()
    if doc_id.endswith((".md", ".markdown")):
        text, title = clean_markdown(document.text, document.document_id, root)
    elif doc_id.endswith(".pdf"):  # the loader read its text as Markdown already (`pdf_text`)
        text, title = document.text, _first_heading(document.text)
    elif doc_id.endswith((".html", ".htm")) or looks_like_html(document.text):
        text, title = html_to_markdown(document.text)
    elif doc_id.endswith((".rst", ".rest")):
        text, title = rst_to_markdown(document.text)
    else:
        text, title = document.text, _first_heading(document.text)
    return replace(document, text=text, title=title or document.document_id)
