"""Cleaners: source markup in, plain Markdown with titles and anchors out."""

from __future__ import annotations

import re
from dataclasses import replace

from pipelines.documents import Document

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ADMONITION_OPEN = re.compile(r"^///\s*(\w+)\s*(?:\|\s*(.*))?$")
_INCLUDE = re.compile(r"^\{[*!].*[*!]\}\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def front_matter_title(front: str) -> str:
    match = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", front, re.M)
    return match.group(1) if match else ""


def clean_markdown(text: str) -> tuple[str, str]:
    """Return (clean text, title). Admonitions keep their content under a label; includes are dropped."""
    title = ""
    front = _FRONT_MATTER.match(text)
    if front:
        title = front_matter_title(front.group(1))
        text = text[front.end() :]
    text = _HTML_COMMENT.sub("", text)
    lines, in_fence = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            lines.append(line)
            continue
        if not in_fence:
            admonition = _ADMONITION_OPEN.match(stripped)
            if admonition:
                label = (admonition.group(2) or admonition.group(1)).strip().capitalize()
                lines.append(f"**{label}:**")
                continue
            if stripped == "///" or _INCLUDE.match(stripped):
                continue
            heading = _HEADING.match(stripped)
            if heading and not title:
                title = re.sub(r"\s*\{\s*#[^}]*\}\s*$", "", heading.group(2))
        lines.append(line.rstrip())
    clean = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    return clean, title


def clean_document(document: Document) -> Document:
    if document.document_id.endswith((".md", ".markdown")):
        text, title = clean_markdown(document.text)
    else:
        text, title = document.text, ""
    return replace(document, text=text, title=title or document.document_id)
