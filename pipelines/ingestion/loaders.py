"""Source loaders: turn a source into `Document`s whose ids are paths relative to the source root."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath

import structlog

from pipelines.documents import Document, sha256_text
from pipelines.ingestion.pdf_text import PdfError, is_pdf, pdf_to_markdown
from pipelines.settings import READ_FORMATS

log = structlog.get_logger(__name__)

# Bounds on what one source may make ragline read: a file bigger than this is refused by name (a documentation
# page is rarely over 1 MB; a build log or a data dump matched by a broad glob would take the build's memory),
# and so is a source of more matched files than this.
MAX_FILE_BYTES = 20_000_000
MAX_FILES = 100_000


class SourceError(ValueError):
    """The source cannot be read as asked (missing directory, no documents matched, a file too big)."""


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


def visible_files(root: Path) -> list[str]:
    """Relative POSIX paths of every regular file under root outside dot-files and dot-folders, sorted.

    Symbolic links are never followed, to files or to folders: a link in a cloned repository can point at any
    file of the machine (`notes.md -> ~/.ssh/id_rsa`), and what it names is not part of the source. Special
    files (FIFOs, sockets, devices) are skipped too: reading a FIFO would block the build. Each skipped path is
    logged."""
    found: list[str] = []
    for folder, folders, files in os.walk(root, followlinks=False):
        base = Path(folder)
        folders[:] = sorted(d for d in folders if not d.startswith(".") and _readable(base / d, root, stat.S_ISDIR))
        found.extend(
            (base / name).relative_to(root).as_posix()
            for name in files
            if not name.startswith(".") and _readable(base / name, root, stat.S_ISREG)
        )
    return sorted(found)


def _readable(path: Path, root: Path, kind: Callable[[int], bool]) -> bool:
    """The path is no symbolic link and of the kind wanted (a regular file, a folder); else it is logged."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        log.warning("source_path_skipped", path=path.relative_to(root).as_posix(), reason="symbolic link")
        return False
    if not kind(mode):
        log.warning("source_path_skipped", path=path.relative_to(root).as_posix(), reason="not a regular file")
        return False
    return True


def read_bounded(
    root: Path, paths: Sequence[str], max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES
) -> list[tuple[str, bytes]]:
    """Each selected file's bytes, refusing a source of more than `max_files` files or a file over
    `max_file_bytes`, by name, before any is read."""
    if len(paths) > max_files:
        raise SourceError(
            f"the source matches {len(paths)} files, more than ragline reads from one source ({max_files}); "
            "narrow it with --include / --exclude or RAGLINE_INCLUDE / RAGLINE_EXCLUDE"
        )
    for rel in paths:
        size = (root / rel).stat().st_size
        if size > max_file_bytes:
            raise SourceError(
                f"{rel} is {size} bytes, over the {max_file_bytes}-byte limit of one document; leave it out with "
                "--exclude or RAGLINE_EXCLUDE"
            )
    return [(rel, (root / rel).read_bytes()) for rel in paths]


def select_paths(root: Path, include: list[str], exclude: list[str]) -> list[str]:
    """Relative POSIX paths under root matched by some include and no exclude, sorted."""
    return [rel for rel in visible_files(root) if matches(rel, include) and not matches(rel, exclude)]


def formats_read() -> str:
    """The formats ragline reads with their file endings, for messages: "Markdown (.md, .markdown), ..."."""
    endings: dict[str, list[str]] = {}
    for suffix, kind in READ_FORMATS.items():
        endings.setdefault(kind, []).append(suffix)
    return ", ".join(f"{kind} ({', '.join(suffixes)})" for kind, suffixes in endings.items())


def nothing_matched(where: str, include: Sequence[str], exclude: Sequence[str], seen: Sequence[str]) -> SourceError:
    """The error of a source none of whose files the globs select: the formats read and the files seen
    (counted by ending, the first few named), so a source of other formats says so at once."""
    if seen:
        endings = Counter(PurePosixPath(p).suffix.lower() or "(no ending)" for p in seen)
        ranked = sorted(endings.items(), key=lambda item: (-item[1], item[0]))[:8]
        counts = ", ".join(f"{n} {ending}" for ending, n in ranked)
        named = ", ".join(seen[:8]) + (", ..." if len(seen) > 8 else "")
        found = f"it holds {len(seen)} file(s) ({counts}): {named}"
    else:
        found = "it holds no file"
    return SourceError(
        f"no documents under {where} match include={list(include)} exclude={list(exclude)}; ragline reads "
        f"{formats_read()}, and {found}"
    )


def load_directory(root: Path, include: list[str], exclude: list[str]) -> list[Document]:
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise SourceError(f"source directory {root} does not exist")
    paths = select_paths(root, include, exclude)
    if not paths:
        raise nothing_matched(str(root), include, exclude, visible_files(root))
    now = dt.datetime.now(dt.UTC).isoformat()
    return [text_document(rel, (root / rel).as_uri(), data, now) for rel, data in read_bounded(root, paths)]


def text_document(document_id: str, source_uri: str, data: bytes, fetched_at: str) -> Document:
    """A document from a file's or a page's bytes: a PDF's text (`pipelines.ingestion.pdf_text`), anything
    else read as UTF-8 (a stray invalid byte becomes U+FFFD).

    A binary file (an image, an archive that a broad include glob matched) and a PDF whose text cannot be
    read are refused by name: read as text they would index noise that no question finds, and the build
    would pass as if all were well."""
    if is_pdf(data):
        try:
            text = pdf_to_markdown(data, document_id)
        except PdfError as exc:
            raise SourceError(
                f"{document_id} is a PDF whose text ragline cannot read: {exc}; leave it out with --exclude or "
                "RAGLINE_EXCLUDE"
            ) from exc
    elif b"\0" in data[:8192]:
        raise SourceError(
            f"{document_id} is not a text document (ragline reads {formats_read()}, and other text files as "
            "plain text); leave it out with --exclude or RAGLINE_EXCLUDE"
        )
    else:
        text = data.decode("utf-8", errors="replace")
    return Document(document_id, source_uri, text, sha256_text(text), fetched_at)


def content_version(documents: Iterable[Document], settings_digest: str) -> str:
    """One build of one source: a hash over every document id, content hash and access groups (when not public)
    plus the build settings: a page whose groups change is a new version, its text and vectors reused."""
    blob = "\n".join(
        f"{d.document_id}\x00{d.content_hash}" + ("" if d.access == ("public",) else f"\x00{','.join(d.access)}")
        for d in sorted(documents, key=lambda d: d.document_id)
    )
    return "v-" + sha256_text(blob + "\x00" + settings_digest)[:12]
