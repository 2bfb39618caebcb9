"""A git repository at a ref, read with the `git` command line into a folder of the data dir."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import subprocess
from pathlib import Path

import structlog

from pipelines.documents import Document
from pipelines.ingestion.loaders import (
    SourceError,
    nothing_matched,
    read_bounded,
    select_paths,
    text_document,
    visible_files,
)

log = structlog.get_logger(__name__)


def _git(*args: str, cwd: Path | None = None, timeout: float = 600) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},  # never wait for a password
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise SourceError(f"git {args[0]} failed: {done.stderr.strip()[:500]}")
    return done.stdout.strip()


def split_spec(spec: str) -> tuple[str, str]:
    """`<repository>#<ref>` into (repository, ref); the ref defaults to HEAD."""
    repository, _, ref = spec.partition("#")
    if not repository:
        raise SourceError(f"git source {spec!r} names no repository")
    return repository, ref or "HEAD"


def checkout_folder(spec: str, cache: Path) -> Path:
    repository, _ = split_spec(spec)
    return cache / hashlib.sha256(repository.encode()).hexdigest()[:16]


def checkout(spec: str, cache: Path) -> tuple[Path, str, str]:
    """Fetch the repository into `cache` (once, then incrementally) and check out the ref: (folder, repo, commit)."""
    repository, ref = split_spec(spec)
    folder = checkout_folder(spec, cache)
    if not (folder / ".git").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        _git("init", "--quiet", str(folder))
        _git("remote", "add", "origin", repository, cwd=folder)
    _git("fetch", "--quiet", "--tags", "--force", "origin", "+refs/heads/*:refs/remotes/origin/*", cwd=folder)
    commit = ""
    for candidate in (ref, f"origin/{ref}", f"refs/tags/{ref}"):
        try:
            commit = _git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", cwd=folder)
            break
        except SourceError:
            continue
    if ref == "HEAD" and not commit:
        head = _git("ls-remote", "--symref", "origin", "HEAD", cwd=folder).split("\n")[0]
        branch = head.split("refs/heads/")[-1].split()[0] if "refs/heads/" in head else "main"
        commit = _git("rev-parse", "--verify", f"origin/{branch}^{{commit}}", cwd=folder)
    if not commit:
        raise SourceError(f"git ref {ref!r} not found in {repository}")
    _git("checkout", "--quiet", "--force", "--detach", commit, cwd=folder)
    _git("clean", "-fdxq", cwd=folder)
    return folder, repository, commit


def load_git(spec: str, include: list[str], exclude: list[str], cache: Path) -> list[Document]:
    folder, repository, commit = checkout(spec, cache)
    paths = select_paths(folder, include, exclude)
    if not paths:
        raise nothing_matched(f"{repository} at {commit[:12]}", include, exclude, visible_files(folder))
    now = dt.datetime.now(dt.UTC).isoformat()
    log.info("git_source_checked_out", repository=repository, commit=commit, documents=len(paths))
    return [text_document(rel, f"{repository}@{commit}:{rel}", data, now) for rel, data in read_bounded(folder, paths)]
