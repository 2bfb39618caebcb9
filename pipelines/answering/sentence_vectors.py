"""A sentence ranker that reads each candidate twice: the cross-encoder beside the question, and the embedding
model's cosine between the question and the sentence under its section heading (and, as the `_rank` variants, the
retrieval score of its passage; `vectors_rank` reads the last two alone, without the cross-encoder).

The cross-encoder (MS MARCO, trained on web passages) scores a documentation sentence alone, out of its section: a
sentence that answers in the page's own words, or whose subject is only in its heading ("Default: 31 days" under
"PERMANENT_SESSION_LIFETIME"), reads as unrelated to it. The index's embedding model was trained to match questions
to passages and reads "heading: sentence" as a passage. Each score is turned into z-scores over the candidates it
ranks (so neither scale dominates) and the two are added: no weight to fit. The sum is then put back on the
cross-encoder's scale (its mean and spread over the same candidates), so the answer's margin (`RANKED_MARGIN`, in the
cross-encoder's logits) keeps as many sentences as it keeps for the cross-encoder alone: a bare sum of z-scores spans a
few units, and every candidate fell within a margin of 5. Fewer than `MIN_CANDIDATES` texts (the spans `extended`
compares) keep the cross-encoder's scores, since z-scores over two values say nothing.
Chosen by a study replaying recorded passages (docs/decisions/sentence-selection.md).

What the embedding model reads of each unit does not depend on the question: a build embeds every passage's
`shown_texts` into the embedding cache (the `sentence_vectors` asset), and a query reads them back instead of
embedding a dozen sentences and code blocks while the asker waits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from pipelines.answering.extractive import SentenceRanker, marked_units
from pipelines.answering.passage_units import block_readings
from pipelines.documents import Chunk

VECTOR_RANKERS = ("cross_encoder_vectors", "cross_encoder_vectors_rank", "vectors_rank")  # read `shown_texts`
MIN_CANDIDATES = 3  # below this many texts the cross-encoder's scores are used alone
# Without the cross-encoder (`vectors_rank`) the summed z-scores are put on a scale where the answer's margin
# (`RANKED_MARGIN`, 5) is 1.25 of their spread: over the pools of four corpora (evals.studies.sentence_pool, aiohttp,
# Mako, kombu, Intake) that keeps 2.68 sentences an answer on average, as the default ranker's margin keeps 2.69.
VECTOR_SPREAD = 4.0


def _ranked_texts(chunk: Chunk) -> list[str]:
    """What a ranker may be given of a passage: each quotable unit, and a unit's reading with the block it
    introduces (`block_readings`) after it."""
    readings = block_readings(chunk.generation_text)
    return [text for unit, _own in marked_units(chunk) for text in (unit, readings.get(unit)) if text is not None]


def shown_text(text: str, heading: str | None) -> str:
    """What the embedding model reads of a unit: "heading: text", or the text alone under no heading."""
    return f"{heading}: {text}" if heading else text


def _heading(chunk: Chunk) -> str:
    return " > ".join(chunk.heading_path)


def shown_texts(chunks: Iterable[Chunk]) -> list[str]:
    """Every text a vector ranker may embed of these passages, each once: each quotable unit (and its reading with
    its block) under its passage's heading path, as `vector_ranker` shows it."""
    return list(dict.fromkeys(shown_text(text, _heading(c)) for c in chunks for text in _ranked_texts(c)))


def own_shown_texts(chunk: Chunk) -> list[str]:
    """The texts of the chunk's own sentences (not its neighbour context's) as the build embedded them ("heading:
    sentence", and a sentence with the block it introduces): what dense search reads of a chunk's sentences
    (`dense_sentences`, pipelines/retrieval/sentence_units.py)."""
    readings = block_readings(chunk.generation_text)
    heading = _heading(chunk)
    return [
        shown_text(text, heading)
        for unit, own in marked_units(chunk)
        if own
        for text in (unit, readings.get(unit))
        if text is not None
    ]


def unit_headings(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Each quotable unit of the passages (and its reading with its block) with its chunk's heading path
    ("Configuration > Sessions"); a unit two passages hold keeps the first one's."""
    headings: dict[str, str] = {}
    for chunk in chunks:
        path = _heading(chunk)
        for text in _ranked_texts(chunk):
            headings.setdefault(text, path)
    return headings


def unit_passage_scores(scored_chunks: Sequence[tuple[Chunk, float]]) -> dict[str, float]:
    """Each quotable unit of the passages (and its reading with its block, as `unit_headings`) with the retrieval
    score of the best passage that holds it (the `cross_encoder_vectors_rank` variant's third reading)."""
    scores: dict[str, float] = {}
    for chunk, score in scored_chunks:
        for text in _ranked_texts(chunk):
            scores[text] = max(score, scores.get(text, score))
    return scores


def _z(values: np.ndarray) -> np.ndarray:
    spread = float(values.std())
    return (values - values.mean()) / (spread or 1.0)


def closeness(
    embed: Callable[[Sequence[str]], np.ndarray], question_vector: np.ndarray, headings: Mapping[str, str]
) -> SentenceRanker:
    """The cosine of the question's vector and each text's, read as "heading: text" (the embedding model's reading
    of a sentence in the vector rankers, and what the `nearest` pool adds by)."""

    def cosines(_question: str, texts: Sequence[str]) -> Sequence[float]:
        shown = [shown_text(t, headings.get(t)) for t in texts]
        return np.asarray(embed(shown), dtype=float) @ np.asarray(question_vector, dtype=float)

    return cosines


def vector_ranker(
    cross_encoder: SentenceRanker | None,
    embed: Callable[[Sequence[str]], np.ndarray],
    question_vector: np.ndarray,
    headings: Mapping[str, str],
    passage_scores: Mapping[str, float] | None = None,
) -> SentenceRanker:
    """The ranker: z(cross-encoder) + z(cosine of the question's vector and "heading: text"'s) for each text, as
    z-scores again, expressed on the cross-encoder's scale over these texts (mean + z * spread). With
    `passage_scores` (unit -> the retrieval score of its passage), a third z-score is added: how well the whole
    passage a sentence comes from matched the question, which a sentence read alone cannot tell (a changelog line
    naming the question's function reads as well as the page that explains it). A text not in it (a span) counts
    as the lowest.
    Without a `cross_encoder` (the `vectors_rank` variant) the cosine and the passage scores are the readings, and the
    result is on the scale `VECTOR_SPREAD` (mean 0); fewer than `MIN_CANDIDATES` texts are ordered by the cosine."""

    near = closeness(embed, question_vector, headings)

    def cosines(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(near("", texts), dtype=float)

    def scores(question: str, texts: Sequence[str]) -> Sequence[float]:
        chosen = list(texts)
        if not chosen:
            return []
        if cross_encoder is None and len(chosen) < MIN_CANDIDATES:
            return [float(v) for v in VECTOR_SPREAD * cosines(chosen)]
        read = np.asarray(list(cross_encoder(question, chosen)), dtype=float) if cross_encoder else None
        if read is not None and len(chosen) < MIN_CANDIDATES:
            return [float(v) for v in read]
        summed = _z(cosines(chosen)) + (_z(read) if read is not None else 0.0)
        if passage_scores:
            floor = min(passage_scores.values())
            summed = summed + _z(np.asarray([passage_scores.get(t, floor) for t in chosen], dtype=float))
        combined = _z(summed)
        if read is None:
            return [float(v) for v in VECTOR_SPREAD * combined]
        return [float(v) for v in read.mean() + read.std() * combined]

    return scores
