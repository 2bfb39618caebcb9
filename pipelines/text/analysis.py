"""BM25 text analysis and sparse vectors.

The analyzer keeps identifiers, version numbers and config keys whole (`memory_bytes`, `16.11.1`,
`[runners.docker]`, `OAuth2PasswordRequestForm`) and also emits their parts, so both the exact
identifier and its words match. Document vectors carry BM25's saturated, length-normalised term
frequency; the vector store multiplies in IDF (Qdrant's `Modifier.Idf`), so IDF always reflects
what the index holds.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "yours",
        "our",
        "us",
        "not",
        "no",
    ]
)

_TOKEN = re.compile(r"\[[\w.\-]+\]|[\w][\w.\-/]*[\w]|\w", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def analyze(text: str) -> list[str]:
    """Terms of a text: whole identifiers plus their parts, lower-cased, stop words removed."""
    terms: list[str] = []
    for token in _TOKEN.findall(text):
        terms.extend(token_terms(token))
    return terms


@lru_cache(maxsize=262_144)
def token_terms(token: str) -> tuple[str, ...]:
    """One token's terms. Cached: documentation repeats a small vocabulary, and analysing every
    occurrence again was most of the time of a BM25 pass over a text (and of the reranker's windows)."""
    whole = token.lower()
    parts = {p.lower() for p in re.split(r"[\[\]._\-/]+", token) if p}
    if len(parts) == 1 and re.search(r"[a-z][A-Z]", token):
        parts = {p.lower() for p in _CAMEL.findall(token)}
    terms = [whole] if whole not in STOPWORDS else []
    terms.extend(part for part in sorted(parts) if part != whole and part not in STOPWORDS and len(part) > 1)
    return tuple(terms)


def analyze_english_stem(text: str, language: str | None = None) -> list[str]:
    """`analyze`, then Snowball English on purely alphabetic terms: "returns" and "returned" meet
    "return"; identifiers, versions and keys (`retention_days`, `16.11.1`) stay whole. Every language
    gets English rules (`snowball` stems each language by its own)."""
    return [stem("english", t) if t.isalpha() else t for t in analyze(text)]


# ISO 639-1 code -> Snowball algorithm, for the languages documentation is commonly translated into.
SNOWBALL_LANGUAGES = {
    "ar": "arabic",
    "ca": "catalan",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "sv": "swedish",
    "tr": "turkish",
}
# A Snowball stemmer keeps the word it works on in the instance: one per thread (a server stems from its query
# threads at once; a shared one mixed two words and raised IndexError under load).
_STEMMERS = threading.local()

# Han, kana and Hangul: written without spaces, so a run of them is one "word" to `\w+`. They are indexed as
# overlapping character bigrams instead (as Lucene's CJKAnalyzer does); a lone character stays a unigram.
CJK_RUN = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)")


@lru_cache(maxsize=262_144)
def stem(algorithm: str, word: str) -> str:
    """`word` stemmed by the named Snowball algorithm. Cached like `token_terms`: the pure-Python
    stemmer was most of the time of analysing a page (7 s of 7.3 s for the FastAPI pages)."""
    mine: dict[str, Any] | None = getattr(_STEMMERS, "by_algorithm", None)
    if mine is None:
        mine = _STEMMERS.by_algorithm = {}
    if algorithm not in mine:
        mine[algorithm] = snowballstemmer.stemmer(algorithm)
    return str(mine[algorithm].stemWord(word))


def cjk_bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def analyze_snowball(text: str, language: str | None = None) -> list[str]:
    """`analyze` with each word stemmed by the Snowball algorithm of the text's language (none for a
    language without one, or an unknown language) and CJK runs as character bigrams. For English text
    it gives exactly `analyze_english_stem`'s terms."""
    algorithm = SNOWBALL_LANGUAGES.get(language or "")
    terms: list[str] = []
    for number, piece in enumerate(CJK_RUN.split(text)):
        if number % 2:  # the split's captured runs sit at odd positions
            terms.extend(cjk_bigrams(piece))
        elif piece:
            terms.extend(stem(algorithm, t) if algorithm is not None and t.isalpha() else t for t in analyze(piece))
    return terms


# An analyzer turns text in a language (ISO code, None when unknown) into BM25 terms. The sparse vectors of
# an index and the questions asked of it must go through the same one: an index version records its
# analyzer's name (`bm25_analyzer` in its chunk settings), and the query side reads it from the active
# version. Names are never reused for other behaviour: an index written under a name is read under it.
Analyzer = Callable[[str, str | None], list[str]]
ANALYZERS: dict[str, Analyzer] = {
    "plain": lambda text, language=None: analyze(text),  # type: ignore[misc]
    "english_stem": analyze_english_stem,
    "snowball": analyze_snowball,
}


def analyzer(name: str) -> Analyzer:
    try:
        return ANALYZERS[name]
    except KeyError:
        raise ValueError(f"unknown BM25 analyzer {name!r}; known: {sorted(ANALYZERS)}") from None


def term_index(term: str) -> int:
    """A stable 31-bit index for a term (no vocabulary to store or keep in step)."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class SparseVector:
    indices: list[int]
    values: list[float]


def document_vector(terms: list[str], avg_length: float, k1: float = 1.2, b: float = 0.75) -> SparseVector:
    counts = Counter(term_index(t) for t in terms)
    norm = k1 * (1 - b + b * len(terms) / max(avg_length, 1.0))
    items = sorted(counts.items())
    return SparseVector([i for i, _ in items], [tf * (k1 + 1) / (tf + norm) for _, tf in items])


def query_vector(text: str, analyzer_name: str = "plain", language: str | None = None) -> SparseVector:
    """A question's sparse vector: analysed as the chunks it is matched against (same analyzer, and
    the language those chunks were analysed in)."""
    indices = sorted({term_index(t) for t in analyzer(analyzer_name)(text, language)})
    return SparseVector(indices, [1.0] * len(indices))


def weighted_query_vector(weights: Mapping[str, float]) -> SparseVector:
    """A sparse query of analysed terms with their own weights (pipelines/retrieval/feedback.py); two terms
    that share an index keep the larger weight."""
    values: dict[int, float] = {}
    for term, weight in weights.items():
        index = term_index(term)
        values[index] = max(values.get(index, 0.0), weight)
    indices = sorted(values)
    return SparseVector(indices, [values[i] for i in indices])


# Words that carry no topic of their own: a question made only of them names nothing to look up.
FUNCTION_WORDS = frozenset(
    """a an the this that these those there here it its it's itself they them their theirs he she him her his i i'm
    i've i'd me my mine myself we us our you your yours yourself one ones someone something anything
    everything nothing thing things stuff is are was were be been being am do does did doing done have has had
    having get gets got getting can could should would will shall may might must need needs let lets not no
    don't doesn't didn't isn't aren't wasn't won't can't cannot couldn't shouldn't what what's which who whom
    whose why when where how how's whatever and or but so if then than too very just also still even again
    only really actually please thanks thank hi hello hey ok okay yes all any some more most much many few lot
    lots of in on at to for from by with about into onto over under up down out off as via per now anymore
    always never sometimes way ways kind sort type bit tell show explain know understand mean""".split()  # noqa: SIM905
)
