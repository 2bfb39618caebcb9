"""Release notes: which pages are a project's changelog, and which questions ask about releases.

A changelog is a page of one-line entries about everything in a project, so it shares words with almost any
question while answering almost none. With `RAGLINE_RELEASE_NOTES=defer`, a question that does not ask about
releases reads a release-notes hit only when too few hits of other pages were found (`RetrievalPlan.kept_hits`).
Both tests read only names: the page's file name and title, the question's words (docs/decisions/release-notes.md).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# File stems (case and `-`/`_` ignored) that name a changelog in Sphinx and MkDocs projects.
_STEMS = frozenset(
    {"changelog", "changes", "history", "versionhistory", "releasenotes", "releasehistory", "news", "whatsnew"}
)
# A title that is, or begins with, a changelog's name ("Changelog", "Version history", "Release notes for 2.x").
_TITLE = re.compile(
    r"^\s*(?:change\s?log|changes|(?:version|release)\s+history|release\s+notes|history|what'?s\s+new|news)\b",
    re.IGNORECASE,
)
# A version number ("3.2", "v2.0.1") or a word about releases and what they changed.
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b", re.IGNORECASE)
_RELEASE_WORDS = frozenset(
    {
        "version",
        "versions",
        "release",
        "releases",
        "released",
        "changelog",
        "change",
        "changes",
        "changed",
        "history",
        "deprecated",
        "deprecation",
        "removed",
        "dropped",
    }
)
_WORD = re.compile(r"[a-z]+")


def is_release_notes(document_id: str, title: str) -> bool:
    """Whether a page is a changelog, by its file name or its title."""
    stem = PurePosixPath(document_id).stem.lower().replace("-", "").replace("_", "")
    return stem in _STEMS or bool(_TITLE.match(title or ""))


def asks_about_releases(question: str) -> bool:
    """Whether a question names a version or asks what changed, was released, deprecated or removed."""
    if _VERSION.search(question):
        return True
    return any(word in _RELEASE_WORDS for word in _WORD.findall(question.lower()))
