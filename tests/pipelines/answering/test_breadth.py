"""Breadth: a question whose one subject word is on most pages is asked back; a name or a rare word is not."""

from __future__ import annotations

from pipelines.answering.breadth import Breadth, assess_breadth, clarifying_question
from pipelines.text.analysis import analyze_english_stem

# A made-up corpus of 20 pages: "widget" on 16 of them, "rotate" on 2, "Redis" on 8.
PAGES = {"widget": 16, "rotat": 2, "redi": 8, "log": 12}


def holding(term: str) -> tuple[int, int]:
    return PAGES.get(term, 0), 20


def judge(question: str, language: str | None = "en") -> Breadth:
    return assess_breadth(question, language, lambda w: analyze_english_stem(w), holding)


def test_one_common_word_is_asked_back_naming_it() -> None:
    found = judge("widgets?")
    assert found.broad and found.word == "widgets" and found.page_share == 0.8
    assert "“widgets”" in clarifying_question(found)
    assert judge("nothing gets logged").broad  # "log": 12 of 20 pages, 0.6


def test_a_rare_word_a_name_or_two_subjects_are_not() -> None:
    assert not judge("rotate?").broad  # 2 of 20 pages
    named = judge("Can I use it with Redis?")  # 8 of 20 pages, but written as a name
    assert not named.broad and named.word == "redis" and named.page_share is None
    assert not judge("How do I rotate a widget?").broad  # two content words: a subject
    assert not judge("widget_count?").broad  # an identifier: its whole form and its parts


def test_the_threshold_and_the_page_floor_bound_it() -> None:
    assert assess_breadth("widgets?", "en", analyze_english_stem, lambda t: (7, 20)).broad  # 0.35
    assert not assess_breadth("widgets?", "en", analyze_english_stem, lambda t: (6, 20)).broad  # 0.30
    assert not assess_breadth("widgets?", "en", analyze_english_stem, lambda t: (2, 3)).broad  # 2 pages only
    assert not assess_breadth("widgets?", "en", analyze_english_stem, lambda t: (0, 0)).broad  # an empty index


def test_scripts_without_spaces_are_not_judged() -> None:
    assert not judge("小部件？", "zh").broad
