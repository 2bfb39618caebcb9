"""Dense search that also reads a chunk's sentences (`dense_sentences=max|mean`).

One vector per chunk averages everything the chunk says; a question phrased in other words than the page matches
the one sentence that answers it better than the chunk's whole vector. The build already embeds every sentence an
answer's ranker may read, as "heading: sentence" (the `sentence_vectors` asset, pipelines/answering/
sentence_vectors.py), so a chunk's own sentences can be compared with the question without embedding anything while
the asker waits: a chunk's sentence score is the best cosine of the question and one of its own sentences. The dense
list fusion orders by is then every chunk of the lane ranked by `max` (the better of the chunk's cosine and its
sentence score) or `mean` (their mean); the candidates keep the store's own dense scores (CRAG grades cosines).

The table of vectors is built once per index version (and caller's view of it) from the embedding cache in the data
dir, one table for every language of the index (a lane reads only its language's chunks); a view whose chunks or
sentences are mostly missing from the cache (an index built elsewhere, or with `RAGLINE_BUILD_SENTENCE_VECTORS` off)
gets the plain dense list, with a warning, rather than a guess.
docs/decisions/dense-units.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import structlog

from pipelines.caching.built_once import BuiltOnce
from pipelines.caching.embeddings import EmbeddingCache
from pipelines.documents import Chunk, chunk_key
from pipelines.ingestion.dense_units import embedding_text
from pipelines.ports import Embedder, Ranked, VectorIndex

log = structlog.get_logger(__name__)

COMBINES = ("off", "max", "mean")
MIN_CACHED_SHARE = 0.5  # below this share of a view's chunks (or sentences) with a cached vector: no table

# The sentence texts of a chunk as the build embedded them ("heading: sentence"), its own sentences only.
SentenceTexts = Callable[[Chunk], Sequence[str]]


@dataclass(frozen=True)
class SentenceTable:
    """One lane's chunks and their own sentences' vectors: `owner[i]` is the row in `keys` of sentence row `i`."""

    keys: list[str]  # each chunk's point id (`documents.chunk_key`)
    chunk_vectors: np.ndarray  # chunks x dimension, float32, unit length
    sentence_vectors: np.ndarray  # sentences x dimension, grouped by chunk in chunk order
    owner: np.ndarray  # sentence row -> chunk row (non-decreasing)
    languages: tuple[str, ...] = ()  # each chunk's language (empty: not told apart)

    def scores(self, question_vector: np.ndarray, combine: str) -> np.ndarray:
        """Each chunk's score for the question: its cosine combined with its best sentence's (`max` | `mean`);
        a chunk without a sentence keeps its cosine."""
        if combine not in ("max", "mean"):
            raise ValueError(f"unknown dense_sentences combination {combine!r}; known: max, mean")
        q = np.asarray(question_vector, dtype=np.float32)
        chunk = self.chunk_vectors @ q
        best = chunk.copy()
        if len(self.owner):
            # Each chunk's sentences are one run of rows: the best of each run, in one pass.
            best[self.owner[self._run_starts]] = np.maximum.reduceat(self.sentence_vectors @ q, self._run_starts)
        return np.maximum(chunk, best) if combine == "max" else (chunk + best) / 2

    @cached_property
    def _run_starts(self) -> np.ndarray:
        """The first sentence row of each chunk's run (the table never changes: computed once, not per question)."""
        return np.flatnonzero(np.r_[True, self.owner[1:] != self.owner[:-1]])

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {key: row for row, key in enumerate(self.keys)}

    def vectors_of(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The chunk vectors of those of `keys` the table holds, by key."""
        return {key: self.chunk_vectors[self._rows[key]] for key in keys if key in self._rows}

    @cached_property
    def _language_array(self) -> np.ndarray:
        return np.asarray(self.languages)

    def ranked(
        self, question_vector: np.ndarray, combine: str, limit: int, language: str | None = None
    ) -> list[Ranked]:
        """The `limit` best chunks by `scores`, best first; with `language`, only that language's (a lane's)."""
        scores = self.scores(question_vector, combine)
        if language is not None and self.languages:
            scores = np.where(self._language_array == language, scores, -np.inf)
        top = np.argsort(-scores, kind="stable")[:limit]
        return [Ranked(self.keys[i], float(scores[i])) for i in top if np.isfinite(scores[i])]


# Each language lane's table (None: plain dense search in that lane).
SentenceUnits = Callable[[str | None], SentenceTable | None]


def build_table(
    chunks: Sequence[Chunk], texts_of: SentenceTexts, cache: EmbeddingCache
) -> tuple[SentenceTable | None, dict[str, int]]:
    """The table of `chunks` from the vectors `cache` holds, and how many chunks and sentences it found; None when
    fewer than `MIN_CACHED_SHARE` of either are there. A chunk without a cached vector is left out."""
    found_chunks = cache.lookup([embedding_text(c) for c in chunks])
    held = [i for i in range(len(chunks)) if i in found_chunks]
    sentence_texts: list[str] = []
    owners: list[int] = []
    for row, i in enumerate(held):
        for text in dict.fromkeys(texts_of(chunks[i])):
            sentence_texts.append(text)
            owners.append(row)
    found_sentences = cache.lookup(sentence_texts)
    counts = {
        "chunks": len(chunks),
        "chunks_cached": len(held),
        "sentences": len(sentence_texts),
        "sentences_cached": len(found_sentences),
    }
    if not held or len(held) < MIN_CACHED_SHARE * len(chunks):
        return None, counts
    if len(found_sentences) < MIN_CACHED_SHARE * len(sentence_texts):
        return None, counts
    rows = sorted(found_sentences)
    dimension = cache.dimension
    return (
        SentenceTable(
            keys=[chunk_key(chunks[i].chunk_id) for i in held],
            chunk_vectors=np.stack([found_chunks[i] for i in held]).astype(np.float32),
            sentence_vectors=(
                np.stack([found_sentences[r] for r in rows]).astype(np.float32)
                if rows
                else np.zeros((0, dimension), dtype=np.float32)
            ),
            owner=np.asarray([owners[r] for r in rows], dtype=np.int64),
            languages=tuple(chunks[i].language for i in held),
        ),
        counts,
    )


class SentenceUnitsCache:
    """One table per (index version, caller's view, strategy), every language in it, built on first use from the
    embedding cache in `data_dir`; the oldest are dropped. `texts_of` gives a chunk's sentence texts as the build embedded
    them (the answering layer knows what a sentence is; retrieval only reads their vectors)."""

    def __init__(self, data_dir: Path, texts_of: SentenceTexts, keep: int = 4) -> None:
        self.cache_path = data_dir / "embedding_cache.sqlite"
        self.texts_of = texts_of
        self._tables: BuiltOnce[tuple[str, str, str | None], SentenceTable | None] = BuiltOnce(keep)

    def source(self, version: str, index: VectorIndex, strategy: str | None, embedder: Embedder) -> SentenceUnits:
        """The plan's tables: the same one for every lane (`ranked` keeps a lane's language)."""

        def of(_language: str | None) -> SentenceTable | None:
            key = (version, index.access_key, strategy)
            return self._tables.get(key, lambda: self._build(version, index, strategy, embedder))

        return of

    def _build(
        self, version: str, index: VectorIndex, strategy: str | None, embedder: Embedder
    ) -> SentenceTable | None:
        chunks = index.scroll_chunks(strategy, None)  # every language of the index: each lane reads its own chunks
        fingerprint = embedder.fingerprint.digest  # type: ignore[attr-defined]
        cache = EmbeddingCache.reader(self.cache_path, fingerprint, embedder.dimension, timeout=5.0)
        if not chunks or cache is None:
            log.warning("dense_sentences_unavailable", version=version, cache=str(self.cache_path))
            return None
        try:
            table, counts = build_table(chunks, self.texts_of, cache)
        finally:
            cache.close()
        if table is None:
            log.warning("dense_sentences_unavailable", version=version, **counts)
        else:
            log.info("dense_sentences_built", version=version, strategy=strategy, **counts)
        return table


def with_sentences(
    dense: list[list[Ranked]],
    lanes: Sequence[str | None],
    units: SentenceUnits,
    question_vector: np.ndarray,
    combine: str,
    limit: int,
) -> list[list[Ranked]]:
    """Each lane's dense list as fusion should order it: by the sentence table's scores where the lane has a
    table, else unchanged."""
    out: list[list[Ranked]] = []
    for hits, language in zip(dense, lanes, strict=True):
        table = units(language)
        out.append(hits if table is None else table.ranked(question_vector, combine, limit, language))
    return out
