"""Which pages are release notes and which questions ask about releases (pipelines/retrieval/release_notes.py)."""

from __future__ import annotations

import pytest

from pipelines.retrieval.release_notes import asks_about_releases, is_release_notes


@pytest.mark.parametrize(
    ("document_id", "title"),
    [
        ("changelog.md", "Python-Markdown Changelog"),
        ("docs/CHANGES.rst", "Changes"),
        ("versionhistory.rst", "Version history"),
        ("en/docs/release-notes.md", "Release Notes"),
        ("history.rst", "Release history"),
        ("whats_new.rst", "What's new in 2.0"),
        ("news.html", "News"),
        ("about/upgrading.md", "Change log"),  # a title alone is enough
    ],
)
def test_a_changelog_is_known_by_its_file_name_or_its_title(document_id: str, title: str) -> None:
    assert is_release_notes(document_id, title)


@pytest.mark.parametrize(
    ("document_id", "title"),
    [
        ("tasks.rst", "Creating and managing tasks"),
        ("migration.rst", "Migrating from AnyIO 3 to AnyIO 4"),
        ("v2-migration-guide.rst", "v2 Migration Guide"),
        ("tutorial/history-of-the-request.md", "The request's history"),  # "history" later in a title
        ("design.rst", "Design and internals"),
    ],
)
def test_other_pages_are_not_release_notes(document_id: str, title: str) -> None:
    assert not is_release_notes(document_id, title)


@pytest.mark.parametrize(
    "question",
    [
        "Which release dropped Python 3.8?",
        "What changed in 4.0 about task groups?",
        "Is Retry.DEFAULT_BACKOFF_MAX deprecated?",
        "When was the ssl_minimum_version option removed?",
        "Does v2.1 still accept a str here?",
        "Which version added support for subinterpreters?",
    ],
)
def test_questions_naming_a_version_or_a_change_ask_about_releases(question: str) -> None:
    assert asks_about_releases(question)


@pytest.mark.parametrize(
    "question",
    [
        "How long do idle worker processes stay alive?",
        "How do I set a timeout on a connection pool?",
        "Can I reuse an Event after it was set?",
        "What does max_workers default to?",
    ],
)
def test_other_questions_do_not(question: str) -> None:
    assert not asks_about_releases(question)
