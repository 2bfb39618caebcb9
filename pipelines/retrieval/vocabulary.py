"""Does an index version hold a word? One single-term sparse lookup, remembered per index version.

Used by the coverage rule (does the corpus mention what the question names?) and the language gate (are a
question's words the documents' own words, whatever the language detector says about a short question?).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from pipelines.ports import VectorIndex
from pipelines.text.analysis import Analyzer, SparseVector, analyzer, term_index

# (index version, access key, strategy, lane language, analysis language, term); a version without a name is None.
_TermKey = tuple[str, str, str | None, str | None, str | None, str]


class _TermMemo:
    """Whether an index version holds a term never changes: remember it (bounded, least recent out)."""

    def __init__(self, size: int) -> None:
        self._items: OrderedDict[_TermKey, bool] = OrderedDict()
        self._size, self._lock = size, threading.Lock()

    def get(self, key: _TermKey) -> bool | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return None

    def put(self, key: _TermKey, value: bool) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_KNOWN = _TermMemo(200_000)


def index_holds(
    index: VectorIndex,
    index_version: str,
    strategy: str | None,
    language: str | None,
    analysis_language: str | None,
    analyze: Analyzer,
    term: str,
) -> bool:
    """Whether any chunk of the caller's view (`index.access_key`) in `language` holds `term`, as the index's
    analyzer wrote it in `analysis_language` (a stem, a bigram, or the whole identifier). A term only a
    restricted page holds is unknown to a caller outside its groups."""
    key = (index_version, index.access_key, strategy, language, analysis_language, term)
    known = _KNOWN.get(key)
    if known is None:
        forms = analyze(term, analysis_language)
        probe = SparseVector([term_index(forms[0] if forms else term)], [1.0])
        known = bool(index.sparse_search(probe, 1, strategy, language))
        _KNOWN.put(key, known)
    return known


def language_words(
    index: VectorIndex, index_version: str, strategy: str | None, bm25_analyzer: str
) -> Callable[[str, str], bool]:
    """`holds(language, word)`: whether the index holds the word among its chunks of that language, analysed as
    that language (the language gate's question: are these the documents' own words?)."""
    analyze = analyzer(bm25_analyzer)

    def holds(language: str, word: str) -> bool:
        return index_holds(index, index_version, strategy, language, language, analyze, word)

    return holds
