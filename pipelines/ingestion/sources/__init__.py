"""Sources: where documents come from. A source is named by one string:

- a directory path: every file under it matched by include/exclude (`pipelines.ingestion.sources.local`);
- `git+<repository>#<ref>`: a git repository at a branch, tag or commit, cloned into the data dir;
- `urls+<file>`: a text file listing one URL a line; `sitemap+<url>`: every page a sitemap lists
  (fetched politely: delay, retries with backoff, robots.txt, size limit; `pipelines.ingestion.sources.web`).

Each document carries its id (path relative to the source root, or the URL's path), a content
hash, its source URI and when it was fetched.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pipelines.documents import Document
from pipelines.ingestion.loaders import SourceError, load_directory, select_paths
from pipelines.ingestion.sources.git import checkout_folder, load_git
from pipelines.ingestion.sources.web import FetchPolicy, load_sitemap, load_url_list
from pipelines.settings import Settings

__all__ = ["SourceError", "is_remote", "load_source", "local_root", "source_allowed", "source_fingerprint"]

REMOTE_PREFIXES = ("git+", "urls+", "sitemap+")


def is_remote(source: str) -> bool:
    return source.startswith(REMOTE_PREFIXES)


def load_source(
    source: str, include: list[str], exclude: list[str], data_dir: Path, policy: FetchPolicy | None = None
) -> list[Document]:
    """Every document of the named source, filtered by include/exclude (paths relative to its root)."""
    if source.startswith("git+"):
        return load_git(source.removeprefix("git+"), include, exclude, data_dir / "sources")
    if source.startswith("urls+"):
        return load_url_list(Path(source.removeprefix("urls+")), include, exclude, policy or FetchPolicy())
    if source.startswith("sitemap+"):
        return load_sitemap(source.removeprefix("sitemap+"), include, exclude, policy or FetchPolicy())
    return load_directory(Path(source), include, exclude)


def local_root(source: str, data_dir: Path) -> Path | None:
    """The folder a source's files sit in (includes are resolved against it); None for URL sources."""
    if source.startswith("git+"):
        return checkout_folder(source.removeprefix("git+"), data_dir / "sources")
    if source.startswith(("urls+", "sitemap+")):
        return None
    return Path(source).expanduser().resolve()


def source_fingerprint(settings: Settings) -> str | None:
    """A cheap digest of a local source's matched files (path, size, mtime) for the change sensor; None
    for a remote source (those are rebuilt on the schedule)."""
    import hashlib

    root = Path(settings.source).expanduser().resolve()
    if is_remote(str(settings.source)) or not root.is_dir():
        return None
    digest = hashlib.sha256()
    for rel in select_paths(root, list(settings.include), list(settings.exclude)):
        stat = (root / rel).stat()
        digest.update(f"{rel}\x00{stat.st_size}\x00{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _local(source: str) -> Path:
    return Path(source).expanduser().resolve()


def _covers(allowed: str, source: str) -> bool:
    """One allow-list entry admits the source: the same folder or one under it, the same repository at any
    ref, the same URL list file, a sitemap on the same scheme and host."""
    if allowed.startswith("git+") or source.startswith("git+"):
        return (
            allowed.startswith("git+") and source.startswith("git+") and (allowed.split("#")[0] == source.split("#")[0])
        )
    if allowed.startswith("sitemap+") or source.startswith("sitemap+"):
        if not (allowed.startswith("sitemap+") and source.startswith("sitemap+")):
            return False
        a, b = urlsplit(allowed.removeprefix("sitemap+")), urlsplit(source.removeprefix("sitemap+"))
        return (a.scheme, a.netloc) == (b.scheme, b.netloc)
    if allowed.startswith("urls+") or source.startswith("urls+"):
        return (
            allowed.startswith("urls+")
            and source.startswith("urls+")
            and (_local(allowed.removeprefix("urls+")) == _local(source.removeprefix("urls+")))
        )
    return _local(source).is_relative_to(_local(allowed))


def source_allowed(source: str, settings: Settings) -> bool:
    """May a build over the admin API index `source`? Only the server's own source and what
    `build_sources` lists: an admin token must not be able to index (and then serve) any file or host the
    server's machine can reach."""
    return any(_covers(str(entry), source) for entry in [str(settings.source), *settings.build_sources])
