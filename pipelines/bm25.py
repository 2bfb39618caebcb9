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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

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
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        whole = token.lower()
        parts = {p.lower() for p in re.split(r"[\[\]._\-/]+", token) if p}
        if len(parts) == 1 and re.search(r"[a-z][A-Z]", token):
            parts = {p.lower() for p in _CAMEL.findall(token)}
        if whole not in STOPWORDS:
            terms.append(whole)
        for part in sorted(parts):
            if part != whole and part not in STOPWORDS and len(part) > 1:
                terms.append(part)
    return terms


_STEMMER = snowballstemmer.stemmer("english")


def analyze_english_stem(text: str) -> list[str]:
    """`analyze`, then Snowball English on purely alphabetic terms: "returns" and "returned" meet
    "return"; identifiers, versions and keys (`retention_days`, `16.11.1`) stay whole."""
    return [_STEMMER.stemWord(t) if t.isalpha() else t for t in analyze(text)]


# The sparse vectors of an index and the questions asked of it must go through the same analyzer: an
# index version records its analyzer's name (`bm25_analyzer` in its chunk settings), and the query side
# reads it from the active version.
ANALYZERS: dict[str, Callable[[str], list[str]]] = {"plain": analyze, "english_stem": analyze_english_stem}


def analyzer(name: str) -> Callable[[str], list[str]]:
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


def query_vector(text: str, analyzer_name: str = "plain") -> SparseVector:
    indices = sorted({term_index(t) for t in analyzer(analyzer_name)(text)})
    return SparseVector(indices, [1.0] * len(indices))
