"""Breadth: a question whose one subject word is on most pages is asked back; a name or a rare word is not."""

from __future__ import annotations

from pipelines.answering.breadth import Breadth, assess_bare_topic, assess_breadth, clarifying_question
from pipelines.guardrails.vagueness import bare_topic
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


def test_a_bare_topic_is_one_or_two_words_that_do_not_ask_or_name_code() -> None:
    assert bare_topic("transactions") == ("transactions",)
    assert bare_topic("Hooks?") == ("hooks",) and bare_topic("tab stuff") == ("tab", "stuff")
    for asking in ("why slow?", "is it async?", "how?", "¿cómo funciona?"):
        assert bare_topic(asking) == (), asking
    for code in ("to_dict", "--verbose", "getting 404", "app.run()", "camelCase"):
        assert bare_topic(code) == (), code
    assert bare_topic("rotate the signing key") == ()  # four words: says what it wants
    assert bare_topic("データベース") == () and bare_topic("  ") == ()


def test_a_bare_topic_is_asked_back_with_distinct_sections() -> None:
    found = assess_bare_topic("widgets?", ["Widgets > Sizing", "", "Widgets > Sizing", "Layout > Grids", "A", "B"])
    assert found.broad and found.word == "widgets" and found.sections == ("Widgets > Sizing", "Layout > Grids", "A")
    asked = clarifying_question(found)
    assert "“widgets”" in asked and "Widgets > Sizing; Layout > Grids; A" in asked
    assert not assess_bare_topic("How do I size a widget?", ["Widgets > Sizing"]).broad
    assert assess_bare_topic("widgets", []).broad and "many pages" in clarifying_question(
        assess_bare_topic("widgets", [])
    )


def test_a_common_bare_topic_is_asked_back_and_a_rare_one_answered() -> None:
    def common(question: str) -> Breadth:
        return assess_bare_topic(question, ["Widgets > Sizing"], terms_of=analyze_english_stem, pages_holding=holding)

    widgets = common("widgets?")  # on 16 of 20 pages
    assert widgets.broad and widgets.page_share == 0.8 and widgets.sections == ("Widgets > Sizing",)
    assert not common("rotate").broad and common("rotate").page_share == 0.1  # 2 of 20 pages: about one thing
    assert common("widget logs").broad  # both words common (0.8, 0.6)
    assert not common("widget rotation").broad  # one of them rare
    assert not common("help?").broad  # no content word: the vagueness guardrail's to ask back
    assert not assess_bare_topic("widgets", [], terms_of=analyze_english_stem, pages_holding=lambda t: (2, 3)).broad
