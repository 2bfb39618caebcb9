"""Coverage rules on their own: which tokens are names, and when a question is not covered."""

from __future__ import annotations

from pipelines.answering.coverage import assess, name_tokens

VOCABULARY = {"harbor", "sync", "registry", "upload", "port", "dashboard", "listen", "javascript", "css", "chart"}


def contains(term: str) -> bool:
    return term in VOCABULARY


def test_names_skip_sentence_starts_possessives_and_question_words() -> None:
    assert name_tokens("How do I use Harbor's sync with Jenkins? Which CI? Then gRPC.", "en") == [
        "Harbor",
        "Jenkins",
        "CI",
        "gRPC",
    ]
    assert name_tokens("I run app.add_middleware(MiddlewareA) first. Which one wins?", "en") == [
        "app.add_middleware",
        "MiddlewareA",
    ]
    # An abbreviation's full stop does not end the sentence; numbers and versions are not names.
    assert name_tokens("Run it at 2 a.m. Daily with chart 9.4.0, e.g. nightly", "en") == ["a.m", "Daily"]
    # "I" in a contraction is the asker, not a name; a possessive in any apostrophe still names its owner.
    assert name_tokens("Can I drop the tokens I've issued once I'm done, or keep Flask’s?", "en") == ["Flask"]
    assert name_tokens("Where I'll run it, does Celery's beat need Redis?", "en") == ["Celery", "Redis"]
    # German capitalises every noun: only mixed case, acronyms and identifiers count there.
    assert name_tokens("Wie lade ich Artefakte mit FastAPI und der CLI hoch?", "de") == ["FastAPI", "CLI"]


def test_a_name_the_corpus_never_mentions_is_not_covered() -> None:
    result = assess("How do I trigger harbor sync from Jenkins?", "en", contains)
    assert not result.covered and result.rule == "names" and result.uncovered_names == ["Jenkins"]
    # A compound is mentioned when one of its word parts is.
    assert assess("How do I serve JavaScript/CSS from the dashboard?", "en", contains).covered


def test_with_names_off_only_the_vocabulary_rule_declines() -> None:
    # The name is the only word the corpus lacks: covered once the names rule is off.
    assert assess("How do I upload a chart to the harbor registry from Jenkins?", "en", contains, names=False).covered
    assert not assess("How do I upload a chart to the harbor registry from Jenkins?", "en", contains).covered
    off = assess("What is the boiling point of Mercury?", "en", contains, names=False)
    assert not off.covered and off.rule == "vocabulary" and off.uncovered_names == []


def test_mostly_absent_vocabulary_is_not_covered_but_one_odd_word_is() -> None:
    off = assess("what is the boiling point of mercury", "en", contains)
    assert not off.covered and off.rule == "vocabulary" and off.absent_terms == ["boiling", "point", "mercury"]
    one_odd = assess("does harbor sync retry a flaky registry upload", "en", contains)
    assert one_odd.covered and one_odd.absent_terms == ["retry", "flaky"] and one_odd.content_terms == 6


def test_a_false_premise_number_is_not_a_missing_name() -> None:
    assert assess("Since chart 9.4.0, which port does the dashboard listen on?", "en", contains).covered


def test_asked_names_are_those_of_the_sentences_that_ask() -> None:
    situation = "My Jenkins upload to the harbor registry works. Which port does the dashboard listen on?"
    assert name_tokens(situation, "en") == ["Jenkins"]
    assert name_tokens(situation, "en", asked_only=True) == []
    assert assess(situation, "en", contains, asked_only=True).covered
    assert not assess(situation, "en", contains).covered
    # The name in the sentence that asks still counts; a question of one sentence is all asking.
    asked = assess("The dashboard is slow. Can harbor sync push to Jenkins?", "en", contains, asked_only=True)
    assert not asked.covered and asked.uncovered_names == ["Jenkins"]
    assert name_tokens("Does harbor sync talk to Jenkins", "en", asked_only=True) == ["Jenkins"]
    # Statements only (no question mark anywhere): every sentence counts.
    assert name_tokens("Harbor sync fails. The Jenkins log says timeout.", "en", asked_only=True) == ["Jenkins"]


def test_a_lowercase_hyphenated_word_is_not_an_asked_name() -> None:
    question = "Is harbor sync fine for a short-lived upload from a Self-Hosted runner?"
    assert name_tokens(question, "en") == ["short-lived", "Self-Hosted"]
    assert name_tokens(question, "en", asked_only=True) == ["Self-Hosted"]
