"""Source loaders: turn a source into `Document`s whose ids are paths relative to the source root."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from pipelines.documents import Document, sha256_text


class SourceError(ValueError):
    """The source cannot be read as asked (missing directory, no documents matched)."""


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a path glob (`**` spans folders, `*` stays within one) into a regex."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(path: str, patterns: Iterable[str]) -> bool:
    return any(glob_regex(p).match(path) for p in patterns)


def select_paths(root: Path, include: list[str], exclude: list[str]) -> list[str]:
    """Relative POSIX paths under root matched by some include and no exclude, sorted."""
    found = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if matches(rel, include) and not matches(rel, exclude):
            found.append(rel)
    return sorted(found)


def load_directory(root: Path, include: list[str], exclude: list[str]) -> list[Document]:
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise SourceError(f"source directory {root} does not exist")
    paths = select_paths(root, include, exclude)
    if not paths:
        raise SourceError(f"no documents under {root} match include={include} exclude={exclude}")
    now = dt.datetime.now(dt.UTC).isoformat()
    return [text_document(rel, (root / rel).as_uri(), (root / rel).read_bytes(), now) for rel in paths]


def text_document(document_id: str, source_uri: str, data: bytes, fetched_at: str) -> Document:
    """A document from a file's or a page's bytes, read as UTF-8 (a stray invalid byte becomes U+FFFD).

    A binary file (a PDF, an image, an archive that a broad include glob matched) is refused by name: read
    as text it would index noise that no question finds, and the build would pass as if all were well."""
    if data.startswith(b"%PDF-") or b"\0" in data[:8192]:
        raise SourceError(
            f"{document_id} is not a text document (ragline reads Markdown, HTML, reStructuredText and plain "
            "text); leave it out with --exclude or RAGLINE_EXCLUDE"
        )
    text = data.decode("utf-8", errors="replace")
    return Document(document_id, source_uri, text, sha256_text(text), fetched_at)


def content_version(documents: Iterable[Document], settings_digest: str) -> str:
    """One build of one source: a hash over every document id and content hash plus the build settings."""
    blob = "\n".join(f"{d.document_id}\x00{d.content_hash}" for d in sorted(documents, key=lambda d: d.document_id))
    return "v-" + sha256_text(blob + "\x00" + settings_digest)[:12]
