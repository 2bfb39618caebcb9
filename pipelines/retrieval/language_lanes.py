"""Which languages a question is searched in: its retrieval lanes.

An index of translated documentation holds every page once per language. Searched as one pool, a
question meets all the translations of the page it needs, and pages in other languages crowd its own
language's out of the top of the list. A lane searches the chunks of one language; fusion interleaves
the lanes' lists. Routes (the `language_route` variant):

- `all`: one lane over every language (how an index of one language is always searched);
- `question`: the question's language when the index holds it, else the source language;
- `question_and_source`: that lane, plus the source language (the one the translations are made
  from, `source_language`, English by default). Translations lag their source and some pages are never
  translated: the original belongs beside the translation. The source lane lists first the originals
  of the question lane's hits, in their order (pipelines/retrieval/translations.py: same path in the source
  language's folder, same section anchor), then the source language's own dense hits for pages that
  were never translated. BM25 does not run there: words do not match across languages. Dense search
  alone was measured as that lane first, and a cross-lingual question's top English hits were
  release-note chunks that mention every feature by name (docs/decisions/language-lanes.md).

A pinned `language_filter` (settings) overrides the route: one lane, that language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.retrieval.fusion import Ranked, fuse_lane, interleave_lanes
from pipelines.retrieval.translations import Originals

ROUTES = ("question_and_source", "question", "all")


@dataclass(frozen=True)
class Lane:
    language: str | None  # chunks of this language only; None: every language
    lexical: bool  # BM25 runs in this lane (dense search always does)
    analysis_language: str | None  # the language BM25 analyses the question in (the lane's chunks' own)
    originals: bool = False  # the lane lists the originals of the first lane's hits before its own hits

    def as_dict(self) -> dict[str, object]:
        return {"language": self.language, "lexical": self.lexical, "originals": self.originals}


def analysis_language(index_languages: Sequence[str], question_language: str | None) -> str | None:
    """The language to analyse a question in when it is searched across the whole index: the index's
    only language, else the question's own."""
    return index_languages[0] if len(index_languages) == 1 else question_language


def lanes(
    route: str,
    question_language: str | None,
    index_languages: Sequence[str],
    source_language: str | None,
    language_filter: str | None = None,
) -> tuple[Lane, ...]:
    if route not in ROUTES:
        raise ValueError(f"unknown language route {route!r}; known: {list(ROUTES)}")
    if language_filter:
        return (Lane(language_filter, True, language_filter),)
    whole = (Lane(None, True, analysis_language(index_languages, question_language)),)
    if route == "all" or len(index_languages) <= 1 or question_language is None:  # nothing to route by
        return whole
    if question_language in index_languages:
        own = Lane(question_language, True, question_language)
    elif source_language in index_languages:  # a language the index does not hold: its source answers
        return (Lane(source_language, True, source_language),)
    else:
        return whole
    if route == "question_and_source" and source_language in index_languages and source_language != question_language:
        return (own, Lane(source_language, False, source_language, originals=True))
    return (own,)


def lexical_languages(
    route: str, index_languages: Sequence[str], language_filter: str | None = None
) -> list[str | None]:
    """Every lane language in which some question can run BM25 under these settings (`lanes`' lexical
    lanes over all question languages): what a server builds BM25 statistics for before the first question."""
    if route not in ROUTES:
        raise ValueError(f"unknown language route {route!r}; known: {list(ROUTES)}")
    if language_filter:
        return [language_filter]
    if route == "all" or len(index_languages) <= 1:
        return [None]
    return [None, *index_languages]  # a question of unknown language searches the whole index


def fuse_lanes(
    lanes: Sequence[Lane],
    dense: Sequence[Ranked],
    sparse: Sequence[Ranked],
    method: str,
    retrieval: str,
    k: int = 60,
    weights: Sequence[float] = (1.0, 1.0),
    originals: Originals | None = None,
) -> list[tuple[str, float]]:
    """One dense and one BM25 list per lane (items are chunk keys) -> the fused list: each lane's lists
    fused with `method`, the originals of the first lane's hits put at the head of a lane that lists
    originals, then the lanes interleaved."""
    if not len(lanes) == len(dense) == len(sparse):
        raise ValueError(f"{len(lanes)} lanes need as many dense and BM25 lists, not {len(dense)} and {len(sparse)}")
    fused = [fuse_lane(method, retrieval, d, s, k, weights) for d, s in zip(dense, sparse, strict=True)]
    for number, lane in enumerate(lanes):
        if lane.originals and originals is not None:
            fused[number] = originals.lead(fused[0], fused[number])
    return interleave_lanes(fused, k)
