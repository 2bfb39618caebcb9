"""Documents in every format ragline reads, as a new user's folder holds them, and small real PDF files.

The PDFs are written here byte by byte, as the PDF 1.7 reference lays them out: a catalog, a page tree, pages
whose content streams are Flate-compressed text operators in a standard Type 1 font, an info dictionary, and a
cross-reference table of every object's byte offset. No PDF library writes them, so the reader under test meets
a file it did not make (poppler's pdfinfo and pdftotext read them without a complaint).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

# The first bytes of a real PNG: its signature and header chunk.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_stream(lines: Sequence[str]) -> bytes:
    """Text operators that set each line 16 points below the last, from the top left of a Letter page."""
    ops = ["BT", "/F1 11 Tf", "16 TL", "72 720 Td"]
    for line in lines:
        ops.append(f"({_escape(line)}) Tj T*")
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def _drawing_stream() -> bytes:
    """A filled rectangle and nothing else: a page with no text layer, as a scan's page has none."""
    return b"0.5 g 72 72 468 648 re f"


def write_pdf(pages: Sequence[Sequence[str] | None], title: str | None = None) -> bytes:
    """A PDF with one page per entry: its lines of text, or None for a page that is only a drawing."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for lines in pages:
        raw = _drawing_stream() if lines is None else _page_stream(lines)
        data = zlib.compress(raw)
        content = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
                b"/Contents %d 0 R >>" % (tree, font, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = add(b"<< /Title (%s) /Producer (ragline tests) >>" % _escape(title).encode("latin-1")) if title else None

    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    trailer += b" /Info %d 0 R >>" % info if info else b" >>"
    out += b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def new_users_docs(root: Path) -> Path:
    """A documentation folder as a new user has one: a page in every format ragline reads, beside files it
    must leave alone (a build script, a picture, a dot-folder)."""
    root.mkdir(parents=True)
    (root / "index.md").write_text("# Harbor\n\nHarbor builds and ships artefacts.\n")
    (root / "notes.markdown").write_text("# Notes\n\nRelease notes live here.\n")
    (root / "guide").mkdir()
    (root / "guide" / "install.rst").write_text(
        "Installing\n==========\n\nHarbor needs Python 3.11 or newer.\n\n.. code-block:: bash\n\n   pip install harbor\n"
    )
    (root / "guide" / "legacy.rest").write_text("Legacy\n======\n\nThe old importer is gone.\n")
    (root / "api").mkdir()
    (root / "api" / "sync.html").write_text(
        "<html><head><title>sync</title></head><body><nav>Home | API</nav><main><h1>harbor sync</h1>"
        "<p>It retries a failed upload three times.</p></main></body></html>"
    )
    (root / "api" / "old.htm").write_text("<html><body><h1>Old API</h1><p>Deprecated calls.</p></body></html>")
    (root / "FAQ.txt").write_text("Frequently asked\n\nHarbor is free software.\n")
    manual = [
        ["Harbor operations manual", "Chapter 1. Ports"],
        [
            "The dashboard of a harbor server listens on port 7420 by default.",
            "Set HARBOR_PORT to choose another port.",
        ],
    ]
    (root / "manual.pdf").write_bytes(write_pdf(manual, title="Harbor Operations Manual"))
    (root / "conf.py").write_text("project = 'harbor'\n")
    (root / "logo.png").write_bytes(PNG)
    (root / ".cache").mkdir()
    (root / ".cache" / "stale.md").write_text("# Stale\n")
    return root
