"""Release notes wait for questions about releases (`release_notes=defer`), on a real index: a changelog whose
entries share the question's words outranks the page that answers, unless its hits wait while other pages'
are kept; a question naming a version reads the changelog as before. The served path and the smoke check rank
alike with it on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.query_graph.harbor import Harbor, harbor_index, retrieved_pages
from tests.query_graph.test_served_retrieval import ranked_alike

PAGES = {
    "changelog.md": """# Changelog

## 3.1.0

- The kiln controller now logs the cone temperature of each firing.
- Fixed the kiln controller stopping a firing when the cone temperature log was full.

## 3.0.0

- The kiln controller reads cone temperatures from the thermocouple every second.
- Removed the kiln controller's old cone temperature table.

## 2.4.0

- The kiln controller warns when a firing climbs faster than the cone temperature allows.
""",
    "kiln/firing.md": """# Firing the kiln

## Cone temperatures

Cone 10 is reached at about 1300 °C in a large gas kiln after twelve hours of firing.
""",
    "kiln/loading.md": """# Loading the kiln

## Shelves

Stack the shelves on three posts each and leave two fingers of space between pots.
""",
    "studio/rules.md": """# Studio rules

## Cleaning

Wipe the wheel after each session and keep the clay bins closed.
""",
}
QUESTION = "Does the kiln controller log the cone temperature of each firing?"
ABOUT_A_RELEASE = "What changed in 3.0.0 about the kiln controller's cone temperature?"


@pytest.fixture(scope="module")
def pottery(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("changelog"), request, PAGES) as index:
        yield index


def test_changelog_hits_wait_for_other_pages_unless_the_question_asks_about_a_release(pottery: Harbor) -> None:
    kept = pottery.service(crag="off", top_k=3, release_notes="keep")
    deferred = pottery.service(crag="off", top_k=3, release_notes="defer")
    # As fused, the changelog, which shares every word of the question, comes first.
    assert retrieved_pages(kept.answer(QUESTION))[0] == "changelog.md"
    waited = retrieved_pages(deferred.answer(QUESTION))
    assert waited[0] == "kiln/firing.md" and "changelog.md" not in waited[:2]
    assert deferred.answer(QUESTION)["variants"]["release_notes"] == "defer"
    # A question naming a version reads the fused list as it is.
    assert retrieved_pages(deferred.answer(ABOUT_A_RELEASE)) == retrieved_pages(kept.answer(ABOUT_A_RELEASE))
    assert retrieved_pages(deferred.answer(ABOUT_A_RELEASE))[0] == "changelog.md"


def test_waiting_hits_fill_the_places_no_other_page_takes(pottery: Harbor) -> None:
    every = retrieved_pages(pottery.service(crag="off", top_k=12, release_notes="keep").answer(QUESTION))
    deferred = retrieved_pages(pottery.service(crag="off", top_k=12, release_notes="defer").answer(QUESTION))
    assert sorted(deferred) == sorted(every)  # nothing is dropped (nor repeated): the changelog's hits come last
    others = [p for p in deferred if p != "changelog.md"]
    assert deferred == others + ["changelog.md"] * (len(deferred) - len(others))


def test_the_smoke_check_ranks_what_the_served_path_ranks_with_release_notes_deferred(pottery: Harbor) -> None:
    served = ranked_alike(pottery, (QUESTION, ABOUT_A_RELEASE), top_k=3, release_notes="defer")
    assert served[0][0]["document_id"] == "kiln/firing.md"
