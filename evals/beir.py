"""`eval beir`: nDCG@10 and recall@100 per retrieval mode on a BEIR-format data set.

Each corpus entry (title + text) is one document and, when it fits the embedder's window, one chunk;
a longer one is split by the heading chunker and a document scores by its best chunk (max over
chunks, i.e. its first appearance in the ranking). The index is written once per corpus, model and
chunk settings, and reused while those are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from evals.ir_metrics import ndcg_at_k, recall_at_k
from evals.stats import latency_summary, mean
from evals.studies.search_modes import SearchSetup, check_modes, run_mode
from pipelines.adapters.embedders import load_embedder
from pipelines.documents import Chunk, Document, make_chunk_id, sha256_text
from pipelines.ingestion import build, dense_units
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ports import VectorIndex, VectorIndexWriter

log = structlog.get_logger(__name__)

DEPTH = 100
STRATEGY = "beir"


@dataclass(frozen=True)
class BeirData:
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV: a `query-id corpus-id score` header, then one judgement a line."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if number == 1 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # header
        if len(parts) != 3:
            raise ValueError(f"{path}:{number}: expected 3 tab-separated columns")
        qrels[parts[0]][parts[1]] = int(parts[2])
    return dict(qrels)


def load_beir(data: Path, qrels_path: Path | None = None) -> BeirData:
    corpus_file, queries_file = data / "corpus.jsonl", data / "queries.jsonl"
    for needed in (corpus_file, queries_file):
        if not needed.is_file():
            raise ValueError(f"{needed} is missing: not a BEIR-format folder")
    qrels_path = qrels_path or data / "qrels" / "test.tsv"
    if not qrels_path.is_file():
        raise ValueError(f"qrels file {qrels_path} is missing")
    corpus = [
        Document(
            document_id=str(row["_id"]),
            source_uri=f"beir:{row['_id']}",
            text=row.get("text", ""),
            content_hash=sha256_text(row.get("title", "") + "\x00" + row.get("text", "")),
            fetched_at="",
            title=row.get("title", ""),
        )
        for row in _jsonl(corpus_file)
    ]
    queries = {str(row["_id"]): row["text"] for row in _jsonl(queries_file)}
    qrels = load_qrels(qrels_path)
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise ValueError(f"{len(missing)} qrels queries are not in queries.jsonl (first: {missing[0]})")
    return BeirData(corpus, queries, qrels)


def chunk_corpus(corpus: Sequence[Document], count: Callable[[str], int], target: int, limit: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for doc in corpus:
        whole = Chunk(
            chunk_id=make_chunk_id(doc.document_id, STRATEGY, 0),
            document_id=doc.document_id,
            title=doc.title,
            heading_path=[],
            anchor="",
            source_uri=doc.source_uri,
            strategy=STRATEGY,
            language="en",
            position=0,
            text=doc.text,
        )
        if count(dense_units.embedding_text(whole)) <= limit:
            chunks.append(whole)
            continue
        # The title goes in front of every piece by embedding_text, so leave room for it.
        budget = limit - count(doc.title) - 4
        for piece in chunk_document(doc, "heading", count, target=min(target, budget), limit=budget, overlap=0):
            chunks.append(Chunk(**{**piece.payload(), "strategy": STRATEGY, "heading_path": [], "language": "en"}))
    return chunks


def index_key(
    data: BeirData,
    embedding_model: str,
    target: int,
    limit: int,
    bm25_analyzer: str = "plain",
    unit_tokens: int = 0,
    unit_scope: str = "all",
) -> str:
    digest = hashlib.sha256()
    for doc in data.corpus:
        digest.update(f"{doc.document_id}\x00{doc.content_hash}\n".encode())
    fingerprint = load_embedder(embedding_model).fingerprint.digest
    # The defaults of earlier shards (plain, no units) add nothing, so those shards keep their keys.
    analyzer = [] if bm25_analyzer == "plain" else [bm25_analyzer]
    units = [f"units={unit_tokens}"] if unit_tokens else []
    if unit_tokens and unit_scope != "all":
        units.append(f"unit_scope={unit_scope}")
    digest.update(json.dumps([fingerprint, target, limit, build.ANALYZER_VERSION, *analyzer, *units]).encode())
    return digest.hexdigest()[:12]


def embed_sentences(
    index: VectorIndex, folder: Path, embedding_model: str, texts_of: Callable[[Chunk], Sequence[str]]
) -> dict[str, int]:
    """Make the BEIR folder's embedding cache hold every chunk's own sentences (`texts_of`), as a ragline build's
    `sentence_vectors` asset does, so `dense_sentences` can be measured on a BEIR set; how many texts were there
    already and how many were embedded."""
    texts = list(dict.fromkeys(t for c in index.scroll_chunks(STRATEGY) for t in texts_of(c)))
    request = build.BuildRequest(
        source=str(folder),
        include=(),
        exclude=(),
        strategies=(STRATEGY,),
        embedding_model=embedding_model,
        target_tokens=0,
        max_tokens=0,
        overlap_tokens=0,
    )

    def progress(done: int, total: int) -> None:
        if done % 2048 < 32 or done == total:
            log.info("beir_sentence_embedding", done=done, total=total)

    reused, computed = build.cache_vectors(texts, request, folder / "embedding_cache.sqlite", progress)
    return {"sentences": len(texts), "reused": reused, "computed": computed}


def build_or_reuse(
    data: BeirData,
    folder: Path,
    embedding_model: str,
    target: int,
    limit: int,
    writer: Callable[[Path, int, bool], VectorIndexWriter],
    bm25_analyzer: str = "plain",
    unit_tokens: int = 0,
    unit_scope: str = "all",
) -> dict[str, Any]:
    """Write the shard once; a `complete.json` beside it marks a finished build to reuse."""
    key = index_key(data, embedding_model, target, limit, bm25_analyzer, unit_tokens, unit_scope)
    marker = folder / key / "complete.json"
    if marker.is_file():
        return {**json.loads(marker.read_text()), "reused": True}
    started = time.perf_counter()
    embedder = load_embedder(embedding_model)
    chunks = chunk_corpus(data.corpus, embedder.count_tokens, target, limit)
    request = build.BuildRequest(
        source=str(folder),
        include=(),
        exclude=(),
        strategies=(STRATEGY,),
        embedding_model=embedding_model,
        target_tokens=target,
        max_tokens=limit,
        overlap_tokens=0,
        bm25_analyzer=bm25_analyzer,
        dense_unit_tokens=unit_tokens,
        dense_unit_scope=unit_scope,
    )

    def progress(done: int, total: int) -> None:
        if done % 512 < 16 or done == total:
            log.info("beir_embedding", done=done, total=total)

    cache = folder / "embedding_cache.sqlite"
    # Embed in slices so a stopped build keeps what it embedded (the cache is written per call);
    # the final call reads every vector back and computes BM25 over the whole corpus.
    for start in range(0, len(chunks), 512):
        build.embed_chunks(chunks[start : start + 512], request, cache)
        log.info("beir_embedding", done=min(start + 512, len(chunks)), total=len(chunks))
    embeddings = build.embed_chunks(chunks, request, cache, progress)
    out = writer(folder / key / "shard", embedder.dimension, embeddings.units is not None)
    out.upsert(chunks, embeddings.dense, embeddings.sparse, embeddings.units)
    out.close()
    info = {
        "key": key,
        "documents": len(data.corpus),
        "chunks": len(chunks),
        "embedding_model": embedding_model,
        "bm25_analyzer": bm25_analyzer,
        "dense_unit_tokens": unit_tokens,
        "dense_unit_scope": unit_scope,
        "fingerprint": embedder.fingerprint.digest,
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(info, indent=2))
    return {**info, "reused": False}


def documents_in_order(chunks: Sequence[Chunk]) -> list[str]:
    """Rank documents by their best chunk: the first time each appears."""
    return list(dict.fromkeys(c.document_id for c in chunks))


@dataclass
class BeirRun:
    index: dict[str, Any]
    per_query: dict[str, dict[str, tuple[float, float]]]  # mode -> query -> (ndcg@10, recall@100)
    latency: dict[str, list[float]]

    def report(self) -> dict[str, Any]:
        modes = {}
        for mode, scores in self.per_query.items():
            modes[mode] = {
                "n": len(scores),
                "ndcg@10": round(mean([s[0] for s in scores.values()]), 4),
                "recall@100": round(mean([s[1] for s in scores.values()]), 4),
                "latency_ms": latency_summary(self.latency[mode]),
            }
        # Per claim, so two runs on the same qrels can be compared pair by pair (python -m evals.tables paired).
        per_query = {mode: {q: round(s[0], 4) for q, s in scores.items()} for mode, scores in self.per_query.items()}
        return {"index": self.index, "modes": modes, "ndcg@10_per_query": per_query}


def evaluate_beir(
    data: BeirData,
    modes: Sequence[str],
    embedding_model: str,
    index: VectorIndex,
    setup: SearchSetup,
    index_info: dict[str, Any],
) -> BeirRun:
    check_modes(modes, setup)
    embedder = load_embedder(embedding_model)
    per_query: dict[str, dict[str, tuple[float, float]]] = {m: {} for m in modes}
    latency: dict[str, list[float]] = {m: [] for m in modes}
    for number, (query_id, relevance) in enumerate(sorted(data.qrels.items()), start=1):
        question = data.queries[query_id]
        vector, passage = setup.expanded(question, embedder.embed_query(question), embedder)
        for mode in modes:
            result = run_mode(mode, question, vector, setup, DEPTH, passage)
            ranked = documents_in_order(result.chunks)
            per_query[mode][query_id] = (ndcg_at_k(ranked, relevance, 10), recall_at_k(ranked, relevance, DEPTH))
            latency[mode].append(result.ms)
        if number % 100 == 0:
            log.info("beir_progress", done=number, of=len(data.qrels))
    return BeirRun(index_info, per_query, latency)
