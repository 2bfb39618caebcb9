"""The retrieval engine: one implementation for the query graph's nodes, CRAG's second try, the ingestion's
smoke check and the evaluations.

A `RetrievalPlan` holds everything one retrieval pass needs, fixed for a request: the variants
(`retrieval` = hybrid | dense | bm25, `bm25_engine` = qdrant | memory, `fusion`, BM25 feedback, the bridge
hop, distinct passages), the index version and its BM25 analyzer, and the languages searched (`lanes`,
pipelines/retrieval/language_lanes.py). Each retriever returns one list per lane; each lane's lists are
fused on their own, a source lane puts the originals of the question lane's hits first, and the lanes'
fused lists are interleaved (`fuse_lanes`). A `RerankPlan` then keeps the `top_k` candidates, in the
cross-encoder's order when one runs; `neighbours_of` adds each hit's adjacent chunks.

`build_plan` turns the query graph's inputs into a plan (the `retrieval_plan` node is a call of it), and
`ServedRetrieval` runs the served default (the settings' variants) on one index version, as the graph
does for a question it answers: the smoke check before activation retrieves through it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import structlog

from pipelines.adapters.registry import IndexVersion
from pipelines.documents import Chunk, chunk_key, make_chunk_id
from pipelines.guardrails.screen import GuardrailPolicy, question_language, read_in_index_language, screen
from pipelines.ports import Embedder, Ranked, StoreUnavailable, VectorIndex
from pipelines.retrieval.bm25 import MemoryBM25, MemoryBM25Cache
from pipelines.retrieval.bridge_hop import asks_two, second_hop
from pipelines.retrieval.dense_feedback import FEEDBACK_PASSAGES, moved_vector
from pipelines.retrieval.expansion import expanded_terms
from pipelines.retrieval.feedback import Feedback
from pipelines.retrieval.fusion import HEADS
from pipelines.retrieval.hubness import Hubness, HubnessCache, penalised
from pipelines.retrieval.language_lanes import Lane, fuse_lanes, lanes
from pipelines.retrieval.release_notes import asks_about_releases, is_release_notes
from pipelines.retrieval.rerank import CrossEncoderReranker, reranked_order
from pipelines.retrieval.sentence_units import SentenceUnits, SentenceUnitsCache, with_sentences
from pipelines.retrieval.translations import Originals, OriginalsCache
from pipelines.retrieval.vocabulary import language_words
from pipelines.settings import Settings
from pipelines.text import analysis
from pipelines.text.asks import split_asks

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk
    fused_rank: int
    fused_score: float
    dense_rank: int | None
    dense_score: float | None
    bm25_rank: int | None
    bm25_score: float | None
    rerank_score: float | None = None
    neighbour_of: str | None = None  # set on a chunk added only because it is adjacent to a hit
    bridge_of: str | None = None  # set on a second-hop chunk: the hit whose heading named its bridge
    bridge: str | None = None  # ... and that identifier (pipelines/retrieval/bridge_hop.py)

    def as_dict(self) -> dict[str, object]:
        c = self.chunk
        out: dict[str, object] = {
            "chunk_id": c.chunk_id,
            "document_id": c.document_id,
            "title": c.title,
            "anchor": c.anchor,
            "heading_path": c.heading_path,
            "source_uri": c.source_uri,
            "language": c.language,
            "fused_rank": self.fused_rank,
            "fused_score": round(self.fused_score, 6),
            "dense_rank": self.dense_rank,
            "dense_score": None if self.dense_score is None else round(self.dense_score, 6),
            "bm25_rank": self.bm25_rank,
            "bm25_score": None if self.bm25_score is None else round(self.bm25_score, 6),
        }
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        if self.neighbour_of is not None:
            out["neighbour_of"] = self.neighbour_of
        if self.bridge_of is not None:
            out["bridge_of"] = self.bridge_of
            out["bridge"] = self.bridge
        return out


@dataclass(frozen=True)
class RetrievalPlan:
    """Everything one retrieval pass needs, fixed for a request."""

    retrieval: str
    bm25_engine: str
    fusion: str
    embedder: Embedder | None  # None: a plan that is only given questions already embedded (`search`)
    vector_index: VectorIndex
    bm25_memory: MemoryBM25Cache
    index_version: str
    strategy: str | None  # None: every strategy the index holds
    lanes: tuple[Lane, ...]
    candidates: int
    keep: int  # candidates kept after fusion (the rerank depth when a reranker follows)
    rrf_k: int
    fusion_weights: tuple[float, ...]
    bm25_analyzer: str = "plain"  # the active index version's, so questions are analysed as its chunks were
    originals: Originals | None = None  # translated chunk -> its original, when a lane lists originals
    feedback: Feedback = field(
        default_factory=Feedback
    )  # BM25 feedback (pipelines/retrieval/feedback.py); off by default
    bridge_depth: int = 0  # the list the generator reads (top_k), where a second hop looks; 0: no second hop
    bridge_sources: int = 3  # the first hits whose headings may name a bridge (pipelines/retrieval/bridge_hop.py)
    distinct: bool = False  # pass over a hit whose passage lies inside a better hit's (`kept_hits`)
    sub_queries: bool = False  # a question of two asks or more also searched per ask (`asked`)
    decompose: Callable[[str], list[str]] | None = None  # `sub_queries=model`: the model's queries, searched as asks
    per_page: int = 0  # at most this many hits of one page before other pages' (`kept_hits`); 0: no limit
    hubness: Hubness | None = (
        None  # fusion reads dense hits less their chunk's hubness (pipelines/retrieval/hubness.py)
    )
    release_notes: bool = False  # `defer`: changelog hits wait unless the question asks about releases (`kept_hits`)
    release_notes_first: bool = False  # `defer_but_first`: the fused list's first hit never waits (`kept_hits`)
    sentences: SentenceUnits | None = None  # dense fusion also reads chunks' sentences (sentence_units.py)
    sentence_combine: str = "off"  # how a chunk's cosine and its best sentence's combine (`dense_sentences`)
    dense_feedback: bool = False  # dense search again from the first hits' vectors (`dense_feedback=rocchio`)

    def dense(self, embedding: np.ndarray) -> list[list[Ranked]]:
        return [
            self.vector_index.dense_ranked(embedding, self.candidates, self.strategy, lane.language)
            for lane in self.lanes
        ]

    def _engine(self, lane: Lane) -> MemoryBM25:
        """The lane's in-memory BM25 engine (built once per index version, then shared)."""
        return self.bm25_memory.engine(
            self.index_version, self.vector_index, self.strategy, lane.language, self.bm25_analyzer
        )

    def sparse(self, question: str, expansion: str = "") -> list[list[Ranked]]:
        """Each lane's BM25 list; with a written passage (`expansion`, pipelines/retrieval/expansion.py) its
        terms join the question's at a lower weight."""
        return [self._sparse(question, lane, expansion) if lane.lexical else [] for lane in self.lanes]

    def _sparse(self, question: str, lane: Lane, expansion: str = "") -> list[Ranked]:
        if expansion:
            return self._weighted(expanded_terms(question, expansion, self.bm25_analyzer, lane.analysis_language), lane)
        if self.bm25_engine == "memory":
            engine = self._engine(lane)
            hits = engine.search(question, self.candidates, lane.analysis_language)
            return [Ranked(chunk_key(h.chunk.chunk_id), h.score) for h in hits]
        vector = analysis.query_vector(question, self.bm25_analyzer, lane.analysis_language)
        return self.vector_index.sparse_ranked(vector, self.candidates, self.strategy, lane.language)

    def sparse_with_feedback(self, question: str, dense: list[list[Ranked]]) -> list[list[Ranked]]:
        """Each lane's BM25 list for the question expanded by the heaviest terms of the lane's top dense
        chunks (pipelines/retrieval/feedback.py); feedback off: the plain BM25 lists."""
        if not self.feedback.on:
            return self.sparse(question)
        out: list[list[Ranked]] = []
        for lane, hits in zip(self.lanes, dense or [[] for _ in self.lanes], strict=True):
            if not lane.lexical:
                out.append([])
                continue
            weights = self.feedback.weights(question, [h.key for h in hits], self._engine(lane), lane.analysis_language)
            out.append(self._weighted(weights, lane))
        return out

    def _weighted(self, weights: Mapping[str, float], lane: Lane) -> list[Ranked]:
        """The lane's BM25 list for analysed terms with their own weights (feedback's or a written passage's)."""
        if self.bm25_engine == "memory":
            hits = self._engine(lane).search_weighted(weights, self.candidates)
            return [Ranked(chunk_key(h.chunk.chunk_id), h.score) for h in hits]
        vector = analysis.weighted_query_vector(weights)
        return self.vector_index.sparse_ranked(vector, self.candidates, self.strategy, lane.language)

    def fused(
        self,
        dense: list[list[Ranked]],
        sparse: list[list[Ranked]],
        question: str | None = None,
        dense_order: list[list[Ranked]] | None = None,
    ) -> list[Candidate]:
        """Fuse each lane's chosen lists, put the originals of the question lane's hits at the head of
        the source lane, interleave the lanes, then read only the kept chunks' payloads (one store call).
        `question` decides whether release notes wait (`release_notes`); None: they do not. `dense_order`: the
        dense lists fusion orders by, when they are not the store's (`sentences_ranked`)."""
        dense = dense or [[] for _ in self.lanes]
        sparse = sparse or [[] for _ in self.lanes]
        # What fusion orders by; the candidates keep each retriever's own scores (CRAG grades cosines).
        ranked = dense_order or dense
        if self.hubness is not None:
            ranked = [
                penalised(hits, self.hubness(lane.language)) for hits, lane in zip(ranked, self.lanes, strict=True)
            ]
        defer = self.release_notes and question is not None and not asks_about_releases(question)
        dense_pairs, sparse_pairs = [_pairs(hits) for hits in ranked], [_pairs(hits) for hits in sparse]
        if self.fusion == "convex_kept_heads":
            dense_pairs = [self.kept_first(pairs, defer) for pairs in dense_pairs]
            sparse_pairs = [self.kept_first(pairs, defer) for pairs in sparse_pairs]
        fused = fuse_lanes(
            self.lanes,
            dense_pairs,
            sparse_pairs,
            self.fusion,
            self.retrieval,
            self.rrf_k,
            self.fusion_weights,
            self.originals,
        )
        kept, chunks = self.kept_hits(fused, defer)
        return _candidates(kept, chunks, dense, sparse)

    def kept_first(
        self, ranked: list[tuple[str, float]], defer_release_notes: bool, heads: int = HEADS
    ) -> list[tuple[str, float]]:
        """`ranked` with its first `heads` hits that `kept_hits` would keep first: a hit whose passage lies inside a
        better hit's of the same list (with `distinct`), or a changelog hit while release notes wait, goes behind
        them, so `convex_heads` leads with as many kept passages of each list as it means to. Only the order of
        the list's head changes, never a score; the payloads of its first few hits are read to tell."""
        window = ranked[: heads * 4]
        chunks = self._payloads([key for key, _ in window])
        lead: list[tuple[str, float]] = []
        waiting: list[tuple[str, float]] = []
        for key, score in window:
            chunk = chunks.get(key)
            passed = chunk is not None and (self._copy(chunk, lead, chunks) or _waits(chunk, defer_release_notes))
            (waiting if passed or len(lead) >= heads else lead).append((key, score))
        return [*lead, *waiting, *ranked[heads * 4 :]]

    def kept_hits(
        self, fused: list[tuple[str, float]], defer_release_notes: bool = False
    ) -> tuple[list[tuple[str, float]], dict[str, Chunk]]:
        """The first `keep` fused hits and their chunks. With `distinct`, a hit whose passage (what the
        generator reads) lies inside the passage of a better hit of the same page is passed over, and the
        next hit takes its place: neighbouring chunks of a page often share one window ("small to big",
        `RAGLINE_CHUNK_CONTEXT_TOKENS`), and a second copy of a passage would take one of the few places
        the generator reads. With `per_page`, a page's hits past that many wait while other pages' hits are
        kept, and fill whatever places are left, in fused order; with `defer_release_notes`, so do the hits
        of changelog pages (pipelines/retrieval/release_notes.py), except the fused list's first hit with
        `release_notes_first`. Payloads are read in batches until `keep` hits are found."""
        if not self.distinct and not self.per_page and not defer_release_notes:
            head = fused[: self.keep]
            return head, self._payloads([key for key, _ in head])
        kept: list[tuple[str, float]] = []
        deferred: list[tuple[str, float]] = []  # over `per_page`, or release notes: they wait for places left
        first = fused[0][0] if fused and self.release_notes_first else None  # `defer_but_first`: it never waits
        pages: Counter[str] = Counter()
        chunks: dict[str, Chunk] = {}
        start = 0
        while len(kept) < self.keep and start < len(fused):
            batch = fused[start : start + self.keep - len(kept)]
            start += len(batch)
            chunks.update(self._payloads([key for key, _ in batch]))
            for key, score in batch:
                chunk = chunks.get(key)  # a missing payload stays in: `_candidates` reports the damaged shard
                better = (*kept, *deferred)  # a waiting hit is still a better hit than the ones after it
                if chunk is not None and self._copy(chunk, better, chunks):
                    continue
                if chunk is not None and self.per_page and pages[chunk.document_id] >= self.per_page:
                    deferred.append((key, score))
                    continue
                if chunk is not None and key != first and _waits(chunk, defer_release_notes):
                    deferred.append((key, score))
                    continue
                if chunk is not None:
                    pages[chunk.document_id] += 1
                kept.append((key, score))
        return kept + deferred[: self.keep - len(kept)], chunks

    def _copy(self, chunk: Chunk, better: Sequence[tuple[str, float]], chunks: Mapping[str, Chunk]) -> bool:
        """With `distinct`: whether `chunk`'s passage lies inside the passage of one of the `better` hits."""
        return self.distinct and any(_inside(chunk, chunks.get(b)) for b, _ in better)

    def _payloads(self, keys: list[str]) -> dict[str, Chunk]:
        """The kept chunks. When this pass has used the lanes' in-memory BM25 engines (BM25 feedback, or
        the memory engine), they already hold every chunk of the lane, read from the index once per
        version: reading from them saves a store call (0.25 ms of a 1.5 ms retrieval overhead,
        docs/operations.md). Keys they lack (another lane's originals) are read from the store."""
        found: dict[str, Chunk] = {}
        uses_engines = (self.retrieval == "hybrid" and self.feedback.on) or (
            self.retrieval != "dense" and self.bm25_engine == "memory"
        )
        for lane in self.lanes if uses_engines else ():
            if lane.lexical:
                engine = self._engine(lane)
                found.update(engine.chunks_by_key(keys))
        missing = [key for key in keys if key not in found]
        if missing:
            found.update(self.vector_index.chunks_by_key(missing))
        return found

    def run(self, question: str) -> list[Candidate]:
        """A whole retrieval pass (CRAG's second try uses it). The BM25 search runs after the embedding,
        not beside it: on 2 cores onnxruntime already uses both, and a search thread next to it made
        retrieval slower (p50 9.7 ms against 9.0 ms in one run; docs/operations.md)."""
        return self.search(question, None if self.retrieval == "bm25" else self.embed(question))

    def embed(self, question: str) -> np.ndarray:
        if self.embedder is None:
            raise ValueError("this retrieval plan has no embedder: give it the question's embedding (`search`)")
        return self.embedder.embed_query(question)

    def search(self, question: str, embedding: np.ndarray | None, expansion: str = "") -> list[Candidate]:
        """A retrieval pass for a question already embedded (the evaluations embed a question once for
        every mode they compare); `embedding` may be None for `bm25`. With a written passage (`expansion`) the
        embedding is the expanded one and BM25 reads the passage's terms too (feedback is not applied then)."""
        if self.retrieval != "bm25" and embedding is None:
            raise ValueError(f"{self.retrieval} retrieval needs the question's embedding")
        dense = self.dense(embedding) if embedding is not None and self.retrieval != "bm25" else []
        if self.retrieval == "hybrid" and not expansion:
            sparse = self.sparse_with_feedback(question, dense)
        else:
            sparse = self.sparse(question, expansion) if self.retrieval != "dense" else []
        order = self.sentences_ranked(dense, embedding)
        fused = self.fed_back(question, self.fused(dense, sparse, question, order), embedding, dense, sparse)
        return self.bridged(question, self.asked(question, fused))

    def sentences_ranked(self, dense: list[list[Ranked]], embedding: np.ndarray | None) -> list[list[Ranked]] | None:
        """The dense lists as fusion orders them when chunks are also read by their sentences (`sentences`,
        pipelines/retrieval/sentence_units.py); None: the store's lists."""
        if self.sentences is None or self.sentence_combine == "off" or embedding is None or not dense:
            return None
        languages = [lane.language for lane in self.lanes]
        return with_sentences(dense, languages, self.sentences, embedding, self.sentence_combine, self.candidates)

    def fed_back(
        self,
        question: str,
        candidates: list[Candidate],
        embedding: np.ndarray | None,
        dense: list[list[Ranked]],
        sparse: list[list[Ranked]],
    ) -> list[Candidate]:
        """With `dense_feedback`, the fusion again after a dense search with the question's vector moved toward
        the first fused hits' vectors (pipelines/retrieval/dense_feedback.py), with the same BM25 lists; the
        candidates keep the question's own dense ranks and cosines (`dense`: a hit only the moved vector found has
        none, as a BM25-only hit). Off, BM25 alone, or without a sentence table to read the hits' vectors from:
        unchanged."""
        if not self.dense_feedback or self.retrieval == "bm25" or embedding is None or not dense or not candidates:
            return candidates
        keys = [chunk_key(c.chunk.chunk_id) for c in candidates[:FEEDBACK_PASSAGES]]
        found: dict[str, np.ndarray] = {}
        for lane in self.lanes:
            table = self.sentences(lane.language) if self.sentences is not None else None
            if table is not None:
                found.update(table.vectors_of(keys))
        if not found:
            log.warning("dense_feedback_unavailable", reason="no sentence table holds the first hits' vectors")
            return candidates
        moved = moved_vector(embedding, np.stack(list(found.values())))
        moved_dense = self.dense(moved)
        order = self.sentences_ranked(moved_dense, moved) or moved_dense
        return self.fused(dense, sparse if self.retrieval == "hybrid" else [], question, order)

    def asked(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        """With `sub_queries`, a question that asks two things or more (pipelines/text/asks.py) is also searched
        ask by ask, and the lists take turns: the whole question's first hit, each ask's first, then the
        second of each, and so on, a chunk once (and, with `distinct`, not a passage a kept hit's passage
        holds). Searched whole, the ask whose words weigh most fills the list with its page, and the page
        that answers the other ask falls below the few places the generator reads. A question of one ask,
        or `sub_queries` off: unchanged, with no extra search. With `decompose` (`sub_queries=model`) the asks
        are the queries the language model wrote (pipelines/retrieval/decomposition.py), searched the same way."""
        if self.decompose is not None:
            asks = self.decompose(question)
        else:
            asks = split_asks(question) if self.sub_queries else []
        if len(asks) < 2:
            return candidates
        single = replace(self, sub_queries=False, decompose=None, bridge_depth=0)
        lists = [candidates] + [
            single.search(ask, None if self.retrieval == "bm25" else self.embed(ask)) for ask in asks
        ]
        merged: list[Candidate] = []
        seen: set[str] = set()
        for rank in range(max(len(hits) for hits in lists)):
            for hits in lists:
                if rank >= len(hits) or hits[rank].chunk.chunk_id in seen:
                    continue
                hit = hits[rank]
                seen.add(hit.chunk.chunk_id)
                if self.distinct and any(_inside(hit.chunk, kept.chunk) for kept in merged):
                    continue
                merged.append(hit)
        return [replace(c, fused_rank=rank) for rank, c in enumerate(merged[: self.keep], start=1)]

    def bridged(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates with a second-hop chunk right after the hit that named its bridge, when the
        question asks two things and its top hits name a bridge (pipelines/retrieval/bridge_hop.py); otherwise
        unchanged. The hop is one BM25 search in the question's lane (its in-memory engine, as BM25
        feedback's). Only hybrid retrieval has a second hop (`build_plan` sets the depth)."""
        lane = next((lane for lane in self.lanes if lane.lexical), None)
        if self.bridge_depth <= 0 or lane is None or len(candidates) < self.bridge_depth or not asks_two(question):
            return candidates  # the common case: no engine lookup, no search
        head = candidates[: self.bridge_depth]
        engine = self._engine(lane)
        hop = second_hop(
            question, [c.chunk for c in head], engine, lane.analysis_language, self.bridge_sources, self.candidates
        )
        if hop is None:
            return candidates
        place = next(i for i, c in enumerate(head) if c.chunk.chunk_id == hop.bridge_of) + 1
        if place >= self.keep:  # its source is the last hit kept: no place after it within the list
            return candidates
        found = next((c for c in candidates if c.chunk.chunk_id == hop.chunk.chunk_id), None)
        score = candidates[place].fused_score if place < len(candidates) else candidates[-1].fused_score
        added = replace(
            found or Candidate(hop.chunk, 0, score, None, None, None, None),
            fused_score=score,
            bridge_of=hop.bridge_of,
            bridge=hop.bridge,
        )
        rest = [c for c in candidates[place:] if c.chunk.chunk_id != hop.chunk.chunk_id]
        ordered = [*candidates[:place], added, *rest][: self.keep]
        return [replace(c, fused_rank=rank) for rank, c in enumerate(ordered, start=1)]


def _waits(chunk: Chunk, defer_release_notes: bool) -> bool:
    """Whether `chunk` is a changelog hit that waits for places left (`release_notes=defer`, not asked about)."""
    return defer_release_notes and is_release_notes(chunk.document_id, chunk.title)


def _inside(chunk: Chunk, better: Chunk | None) -> bool:
    """Whether everything the generator would read of `chunk` is already in `better`'s passage."""
    return (
        better is not None
        and chunk.document_id == better.document_id
        and chunk.generation_text in better.generation_text
    )


def _pairs(hits: list[Ranked]) -> list[tuple[str, float]]:
    return [(h.key, h.score) for h in hits]


def _ranks(lists: list[list[Ranked]]) -> dict[str, tuple[int, float]]:
    """Each chunk's rank and score in its lane's list (lanes hold disjoint languages)."""
    return {h.key: (rank, h.score) for hits in lists for rank, h in enumerate(hits, start=1)}


def _candidates(
    kept: list[tuple[str, float]],
    chunks: dict[str, Chunk],
    dense_hits: list[list[Ranked]],
    bm25_hits: list[list[Ranked]],
) -> list[Candidate]:
    """Candidates in fused order, each with every retriever's own rank and score."""
    dense, sparse = _ranks(dense_hits), _ranks(bm25_hits)
    missing = [key for key, _ in kept if key not in chunks]
    if missing:  # a point without its payload: the shard is damaged, do not answer from half of it
        raise StoreUnavailable(f"chunks {missing[:3]} were found by search but cannot be read")
    return [
        Candidate(
            chunk=chunks[key],
            fused_rank=rank,
            fused_score=score,
            dense_rank=dense.get(key, (None, None))[0],
            dense_score=dense.get(key, (None, None))[1],
            bm25_rank=sparse.get(key, (None, None))[0],
            bm25_score=sparse.get(key, (None, None))[1],
        )
        for rank, (key, score) in enumerate(kept, start=1)
    ]


# The settings that shape which hits a plan keeps and how (each also a query-graph variant or its parameter):
# `hit_rules` turns them into RetrievalPlan's fields, for the graph, the served retrieval and the evaluations alike.
RULE_SETTINGS: tuple[str, ...] = (
    "bm25_feedback",
    "bridge_hop",
    "distinct_passages",
    "sub_queries",
    "release_notes",
    "passages_per_page",
    "bm25_feedback_docs",
    "bm25_feedback_terms",
    "bm25_feedback_weight",
    "bridge_hop_sources",
)


def rule_settings(settings: Settings) -> dict[str, Any]:
    """The settings' values of `RULE_SETTINGS`, by name (`build_plan`'s and `hit_rules`' keyword arguments)."""
    return {name: getattr(settings, name) for name in RULE_SETTINGS}


def hit_rules(
    retrieval: str,
    top_k: int,
    *,
    bm25_feedback: str,
    bridge_hop: str,
    distinct_passages: str,
    sub_queries: str,
    release_notes: str = "keep",
    passages_per_page: int = 0,
    bm25_feedback_docs: int = 3,
    bm25_feedback_terms: int = 20,
    bm25_feedback_weight: float = 0.2,
    bridge_hop_sources: int = 3,
) -> dict[str, Any]:
    """RetrievalPlan's fields that the rule variants set (`feedback` ... `release_notes`), from the variants'
    names: the one place a variant becomes behaviour. The bridge hop runs in hybrid retrieval only."""
    on = bm25_feedback == "on"
    return {
        "feedback": Feedback(bm25_feedback_docs if on else 0, bm25_feedback_terms, bm25_feedback_weight),
        "bridge_depth": top_k if bridge_hop == "on" and retrieval == "hybrid" else 0,
        "bridge_sources": bridge_hop_sources,
        "distinct": distinct_passages == "on",
        "sub_queries": sub_queries == "asks",
        "per_page": passages_per_page,
        "release_notes": release_notes in ("defer", "defer_but_first"),
        "release_notes_first": release_notes == "defer_but_first",
    }


def build_plan(
    retrieval: str,
    bm25_engine: str,
    fusion: str,
    rerank: str,
    embedder: Embedder,
    vector_index: VectorIndex,
    bm25_memory: MemoryBM25Cache,
    index_version: str,
    strategy: str,
    candidates: int,
    top_k: int,
    rrf_k: int,
    rerank_depth: int,
    fusion_weights: Sequence[float],
    retrieval_lanes: tuple[Lane, ...],
    originals_cache: OriginalsCache,
    bm25_feedback: str,
    bridge_hop: str,
    distinct_passages: str,
    bm25_analyzer: str = "plain",
    sub_queries: str = "off",
    passages_per_page: int = 0,
    bm25_feedback_docs: int = 3,
    bm25_feedback_terms: int = 20,
    bm25_feedback_weight: float = 0.2,
    bridge_hop_sources: int = 3,
    hubness: Hubness | None = None,
    release_notes: str = "keep",
    sentences: SentenceUnits | None = None,
    dense_sentences: str = "off",
    dense_feedback: str = "off",
) -> RetrievalPlan:
    """The plan of one request from its variants (`retrieval` ... `distinct_passages`) and settings: the
    query graph's `retrieval_plan` node, and `ServedRetrieval` with the settings' defaults."""
    originals = None
    for lane in retrieval_lanes:  # the table is read once per index version, and only for a multilingual index
        if lane.originals and lane.language is not None:
            originals = originals_cache.table(index_version, vector_index, strategy, lane.language)
    return RetrievalPlan(
        retrieval=retrieval,
        bm25_engine=bm25_engine,
        fusion=fusion,
        embedder=embedder,
        vector_index=vector_index,
        bm25_memory=bm25_memory,
        index_version=index_version,
        strategy=strategy,
        lanes=retrieval_lanes,
        candidates=max(candidates, top_k),
        keep=max(rerank_depth, top_k) if rerank != "none" else top_k,
        rrf_k=rrf_k,
        fusion_weights=tuple(fusion_weights),
        bm25_analyzer=bm25_analyzer,
        originals=originals,
        hubness=hubness,
        sentences=sentences if dense_sentences != "off" else None,
        sentence_combine=dense_sentences,
        dense_feedback=dense_feedback == "rocchio",
        **hit_rules(
            retrieval,
            top_k,
            bm25_feedback=bm25_feedback,
            bridge_hop=bridge_hop,
            distinct_passages=distinct_passages,
            sub_queries=sub_queries,
            release_notes=release_notes,
            passages_per_page=passages_per_page,
            bm25_feedback_docs=bm25_feedback_docs,
            bm25_feedback_terms=bm25_feedback_terms,
            bm25_feedback_weight=bm25_feedback_weight,
            bridge_hop_sources=bridge_hop_sources,
        ),
    )


@dataclass(frozen=True)
class RerankPlan:
    """The rerank step as an object, so CRAG's second retrieval is reranked the same way: `top_k`
    candidates, in the rerank order when there is a cross-encoder (`rerank.reranked_order`), else in the
    fused order."""

    reranker: CrossEncoderReranker | None
    top_k: int
    order: str = "cross_encoder"

    def apply(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        if self.reranker is None:
            return candidates[: self.top_k]
        logits = self.reranker.scores(question, [c.chunk.generation_text for c in candidates])
        rescored = [replace(c, rerank_score=s) for c, s in zip(candidates, logits, strict=True)]
        return [rescored[i] for i in reranked_order(logits, self.order)][: self.top_k]


def neighbours_of(candidates: list[Candidate], vector_index: VectorIndex) -> list[Candidate]:
    """Each candidate followed by its adjacent chunks (same document, position ±1) that are not already
    candidates, so a list or a procedure split across chunks reaches the generator whole."""
    present = {c.chunk.chunk_id for c in candidates}
    wanted: dict[str, str] = {}
    for c in candidates:
        for position in (c.chunk.position - 1, c.chunk.position + 1):
            if position < 0:
                continue
            cid = make_chunk_id(c.chunk.document_id, c.chunk.strategy, position)
            if cid not in present and cid not in wanted:
                wanted[cid] = c.chunk.chunk_id
    found = {ch.chunk_id: ch for ch in vector_index.get_chunks(list(wanted))}
    out: list[Candidate] = []
    for c in candidates:
        out.append(c)
        for cid, parent in wanted.items():
            if parent == c.chunk.chunk_id and cid in found:
                out.append(
                    Candidate(found[cid], c.fused_rank, c.fused_score, None, None, None, None, None, c.chunk.chunk_id)
                )
    return out


def question_lanes(
    question: str, settings: Settings, index_languages: Sequence[str], holds: Callable[[str, str], bool]
) -> tuple[Lane, ...]:
    """The lanes a typed question is searched in: the language the guardrails judge it in (the query
    graph's `guardrail_language` and `guardrail_verdict`; `holds(language, word)`: does the index hold the
    word), routed by the settings (`language_route`, `source_language`, `language_filter`) over the index
    version's languages (the graph's `retrieval_lanes`)."""
    s = settings
    policy = GuardrailPolicy(s.max_question_chars, tuple(index_languages), s.language_gate, s.language_min_confidence)
    guess = read_in_index_language(
        question,
        question_language(question, None, s.language_min_confidence),
        index_languages,
        s.language_min_confidence,
        s.language_index_words,
        holds,
    )
    language = screen(question, policy, guess).language
    return lanes(s.language_route, language, index_languages, s.source_language, s.language_filter)


# The settings a `ServedRetrieval` reads that change its ranking (the index version adds its analyzer).
SERVED_PROFILE = (
    "retrieval",
    "bm25_engine",
    "fusion",
    "fusion_weights",
    "rrf_k",
    "candidates",
    "top_k",
    "bm25_feedback",
    "bm25_feedback_docs",
    "bm25_feedback_terms",
    "bm25_feedback_weight",
    "bridge_hop",
    "bridge_hop_sources",
    "distinct_passages",
    "sub_queries",
    "passages_per_page",
    "dense_hubness",
    "dense_sentences",
    "dense_feedback",
    "release_notes",
    "language_route",
    "source_language",
    "language_filter",
    "rerank",
    "rerank_depth",
    "reranker_model",
    "rerank_max_tokens",
)


def served_profile(settings: Settings) -> dict[str, object]:
    """The settings that decide what `ServedRetrieval` ranks: a score recorded with another profile is not
    comparable."""
    return {name: getattr(settings, name) for name in SERVED_PROFILE}


@dataclass
class ServedRetrieval:
    """The served default's retrieval on one index version: the settings' variants (retrieval, BM25
    engine, fusion, feedback, bridge hop, distinct passages, rerank) and numbers, the version's own BM25
    analyzer and languages, then the rerank step; what the query graph ranks for a question it answers
    with its default variants (`reranked_candidates`). The in-memory BM25 engines and the translation
    table are built on first use and kept for this version."""

    settings: Settings
    embedder: Embedder
    index: VectorIndex
    version: IndexVersion
    strategy: str
    reranker: CrossEncoderReranker | None = None  # loaded on first use when the settings rerank
    bm25_memory: MemoryBM25Cache = field(default_factory=MemoryBM25Cache)
    originals: OriginalsCache = field(default_factory=OriginalsCache)
    hubness_cache: HubnessCache | None = None  # built on first use when the settings discount dense hubs
    sentence_units: SentenceUnitsCache | None = None  # given by a caller that serves `dense_sentences`

    def plan(self, question: str) -> RetrievalPlan:
        s = self.settings
        hubness = None
        if s.dense_hubness == "csls":
            if self.hubness_cache is None:
                self.hubness_cache = HubnessCache(s.data_dir)
            hubness = self.hubness_cache.source(self.version.version, self.index, self.strategy, self.embedder)
        bm25_analyzer = self.version.chunk_settings.get("bm25_analyzer", "plain")
        holds = language_words(self.index, self.version.version, self.strategy, bm25_analyzer)
        return build_plan(
            retrieval=s.retrieval,
            bm25_engine=s.bm25_engine,
            fusion=s.fusion,
            rerank=s.rerank,
            embedder=self.embedder,
            vector_index=self.index,
            bm25_memory=self.bm25_memory,
            index_version=self.version.version,
            strategy=self.strategy,
            candidates=s.candidates,
            top_k=s.top_k,
            rrf_k=s.rrf_k,
            rerank_depth=s.rerank_depth,
            fusion_weights=s.fusion_weights,
            retrieval_lanes=question_lanes(question, s, self.version.languages, holds),
            originals_cache=self.originals,
            bm25_analyzer=bm25_analyzer,
            hubness=hubness,
            sentences=(
                self.sentence_units.source(self.version.version, self.index, self.strategy, self.embedder)
                if s.dense_sentences != "off" and self.sentence_units is not None
                else None
            ),
            dense_sentences=s.dense_sentences,
            dense_feedback=s.dense_feedback,
            **rule_settings(s),
        )

    def rerank_plan(self) -> RerankPlan:
        s = self.settings
        if s.rerank == "none":
            return RerankPlan(None, s.top_k)
        if self.reranker is None:
            self.reranker = CrossEncoderReranker(s.reranker_model, s.reranker_path, s.rerank_max_tokens)
        return RerankPlan(self.reranker, s.top_k, s.rerank)

    def candidates(self, question: str) -> list[Candidate]:
        return self.rerank_plan().apply(question, self.plan(question).run(question))

    def chunks(self, question: str) -> list[Chunk]:
        return [c.chunk for c in self.candidates(question)]
