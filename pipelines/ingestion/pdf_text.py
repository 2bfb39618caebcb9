"""PDF: the text of every page, read with pypdf, as Markdown the chunkers read.

A PDF carries no headings a parser can trust, so the document is its title as a heading (the PDF's own
title when it names one, else the file's name) and each page with text under a `## Page N` heading:
a citation then names the page its passage is on. Lines a Markdown reader would take for a heading or a
code fence are escaped, so a `#include` or a row of backticks in the text stays text.

Refused by name, never indexed as noise: a file pypdf cannot parse, an encrypted one that does not open
with the empty password, and one with no text layer (a scan: ragline reads text, not images).
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import PurePosixPath

PDF_HEADER = b"%PDF-"
# The header may follow a few bytes of junk (the PDF reference allows it within the first 1,024 bytes).
_HEADER_WINDOW = 1024
_MARKDOWN_LINE = re.compile(r"^(\s*)(#{1,6}\s|```|~~~)")
_TITLE_NOISE = re.compile(r"^(untitled|microsoft word - .*|document\d*|\s*)$", re.I)


class PdfError(ValueError):
    """The PDF cannot be read as text (the loader names the file in the message it raises)."""


def is_pdf(data: bytes) -> bool:
    return PDF_HEADER in data[:_HEADER_WINDOW]


def pdf_to_markdown(data: bytes, document_id: str) -> str:
    """The PDF's text as Markdown: `# title`, then `## Page N` and the page's text for each page with text."""
    from pypdf import PasswordType, PdfReader

    # pypdf logs every repaired defect of a PDF as a warning; a page it can read is read, quietly.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise PdfError("it is encrypted with a password")
        pages = [page.extract_text() or "" for page in reader.pages]
        metadata_title = (reader.metadata.title if reader.metadata else None) or ""
    except PdfError:
        raise
    except Exception as exc:  # a damaged file can fail anywhere in the parser: the build names it either way
        raise PdfError(f"pypdf cannot read it ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not any(text.strip() for text in pages):
        raise PdfError(f"none of its {len(pages)} page(s) has a text layer (a scanned image?)")
    title = metadata_title.strip()
    if _TITLE_NOISE.match(title):
        title = PurePosixPath(document_id).stem
    lines = [f"# {title}"]
    for number, text in enumerate(pages, start=1):
        body = [_MARKDOWN_LINE.sub(r"\1\\\2", line.rstrip()) for line in text.splitlines()]
        if any(body):
            lines += ["", f"## Page {number}", "", *body]
    return "\n".join(lines).strip() + "\n"
