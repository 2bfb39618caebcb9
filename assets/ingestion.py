"""Ingestion assets: source documents to an active index. Each asset is a thin shell over `pipelines`.

`chunks` is partitioned by strategy (one partition per name in `pipelines.ingestion.chunkers.STRATEGIES`);
`embeddings` and `shadow_collection` read every partition that was built and keep the strategies
the build asked for. Blocking checks sit beside the asset they judge; their logic is in
`pipelines.ingestion.index_checks`, their results go to the Dagster UI and the registry's `checks` column.
"""

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetExecutionContext,
    AssetIn,
    DynamicOut,
    DynamicOutput,
    MetadataValue,
    OpExecutionContext,
    StaticPartitionsDefinition,
    asset,
    asset_check,
    graph_asset,
    op,
)

from assets.resources import IngestionEnv, IngestionResource
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.registry import IndexVersion
from pipelines.answering.sentence_vectors import VECTOR_RANKERS, own_shown_texts, shown_texts
from pipelines.documents import Chunk, Document
from pipelines.guardrails.topic_gate import reference_passages
from pipelines.ingestion import build, index_checks
from pipelines.ingestion.chunkers import STRATEGIES
from pipelines.retrieval import smoke_check

GROUP = "ingestion"
STRATEGY_PARTITIONS = StaticPartitionsDefinition(list(STRATEGIES))


def _env(context: Any) -> IngestionEnv:
    """In-process builds pass an `IngestionEnv`; `dagster dev` passes the configurable resource."""
    resource = context.resources.ragline
    return resource.env if isinstance(resource, IngestionResource) else resource


def _record(env: IngestionEnv, documents: list[Document], results: dict[str, Any], seconds: float, step: str) -> None:
    """Keep check results and their time in the registry row of this content version."""
    version = build.version_of(env.request, documents)
    env.stores.registry.merge(version, checks=results, timings={f"check_{step}_seconds": round(seconds, 3)})


def _result(results: dict[str, Any], **metadata: Any) -> AssetCheckResult:
    failed = sorted(name for name, r in results.items() if not r["passed"])
    return AssetCheckResult(
        passed=not failed,
        metadata={
            "failed": ", ".join(failed) or "none",
            "results": MetadataValue.json(results),
            **metadata,
        },
    )


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def source_documents(context: AssetExecutionContext) -> list[Document]:
    """Every document of the source, with its id (path relative to the source root) and content hash."""
    env = _env(context)
    started = time.perf_counter()
    documents = (
        env.prefetched
        if env.prefetched is not None
        else build.fetch_documents(env.request, env.settings.data_dir, build.fetch_policy(env.settings))
    )
    context.add_output_metadata(
        {"documents": len(documents), "source": env.request.source, "seconds": round(time.perf_counter() - started, 2)}
    )
    return documents


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def clean_documents(context: AssetExecutionContext, source_documents: list[Document]) -> list[Document]:
    """Documents with markup resolved, titles found and language detected; the version is registered `building`."""
    env = _env(context)
    started = time.perf_counter()
    documents = build.clean_documents(
        source_documents,
        language_from_folder=env.settings.language_from_folder,
        root=build.source_root(env.request, env.settings.data_dir),
    )
    seconds = time.perf_counter() - started
    build.register_building(env.stores, env.request, documents, {"clean_seconds": round(seconds, 3)})
    languages: dict[str, int] = {}
    for d in documents:
        languages[d.language] = languages.get(d.language, 0) + 1
    context.add_output_metadata(
        {"documents": len(documents), "languages": MetadataValue.json(languages), "seconds": round(seconds, 2)}
    )
    return documents


@asset_check(
    asset=clean_documents,
    blocking=True,
    required_resource_keys={"ragline"},
    description="Every document's language is in the configured set (RAGLINE_LANGUAGES).",
)
def languages_allowed(context: AssetCheckExecutionContext, clean_documents: list[Document]) -> AssetCheckResult:
    env = _env(context)
    started = time.perf_counter()
    results = {"document_languages_allowed": index_checks.document_languages(clean_documents, env.settings.languages)}
    _record(env, clean_documents, results, time.perf_counter() - started, "languages")
    return _result(results)


@asset(group_name=GROUP, required_resource_keys={"ragline"}, partitions_def=STRATEGY_PARTITIONS)
def chunks(context: AssetExecutionContext, clean_documents: list[Document]) -> list[Chunk]:
    """The chunks of one strategy (this partition), for every clean document."""
    env = _env(context)
    strategy = context.partition_key
    started = time.perf_counter()
    out = build.chunk_documents(clean_documents, env.request, strategy)
    seconds = time.perf_counter() - started
    tokens = sum(c.token_count for c in out)
    build.record_timing(env.stores, env.request, clean_documents, {f"chunk_{strategy}_seconds": round(seconds, 3)})
    context.add_output_metadata(
        {
            "strategy": strategy,
            "chunks": len(out),
            "tokens": tokens,
            "max_tokens": max((c.token_count for c in out), default=0),
            "seconds": round(seconds, 2),
            "chunks_per_s": round(len(out) / seconds, 1) if seconds else 0.0,
        }
    )
    return out


@asset_check(
    asset=chunks,
    blocking=True,
    partitions_def=STRATEGY_PARTITIONS,
    required_resource_keys={"ragline"},
    additional_ins={"clean_documents": AssetIn("clean_documents")},
    description="No text lost (every sentence is in some chunk); ids unique; none empty or over the token "
    "limit; languages in the configured set (a Great Expectations suite).",
)
def chunks_are_sound(
    context: AssetCheckExecutionContext, chunks: list[Chunk], clean_documents: list[Document]
) -> AssetCheckResult:
    env = _env(context)
    started = time.perf_counter()
    results = index_checks.chunk_suite_checks(chunks, env.request.max_tokens, env.settings.languages)
    results["no_text_lost"] = index_checks.lost_text(clean_documents, chunks)
    strategy = chunks[0].strategy if chunks else "none"
    keyed = {f"{name}[{strategy}]": value for name, value in results.items()}
    _record(env, clean_documents, keyed, time.perf_counter() - started, f"chunks_{strategy}")
    return _result(results, strategy=strategy)


@op(required_resource_keys={"ragline"}, out=DynamicOut(list[str]))
def embedding_batches(
    context: OpExecutionContext, chunks: dict[str, list[Chunk]]
) -> Iterator[DynamicOutput[list[str]]]:
    """The texts the embedding cache lacks, in `RAGLINE_EMBEDDING_FANOUT` batches, one step each; none at a
    fan-out of 1 (`assemble_embeddings` embeds them in its own step, as a build always did)."""
    env = _env(context)
    if env.settings.embedding_fanout < 2:
        return
    selected = build.gather_chunks(chunks, env.request.strategies)
    missing = build.texts_to_embed(selected, env.request, env.settings.data_dir / "embedding_cache.sqlite")
    batches = build.split_evenly(missing, env.settings.embedding_fanout)
    context.log.info(f"{len(missing)} new texts to embed in {len(batches)} steps")
    for i, batch in enumerate(batches):
        yield DynamicOutput(batch, mapping_key=f"batch_{i}")


@op(required_resource_keys={"ragline"})
def embed_batch(context: OpExecutionContext, texts: list[str]) -> int:
    """One batch's vectors, into the embedding cache every step of the build reads (on a shared data dir)."""
    env = _env(context)
    path = env.settings.data_dir / "embedding_cache.sqlite"
    started = time.perf_counter()
    count = build.embed_into_cache(texts, env.request, path, _progress(context, env))
    context.log.info(f"embedded {count} texts in {time.perf_counter() - started:.1f} s (pid {os.getpid()})")
    return count


def _progress(context: Any, env: IngestionEnv, stage: str = "embedding") -> Callable[[int, int], None]:
    last = [0.0]
    what = "chunks" if stage == "embedding" else stage

    def progress(done: int, total: int) -> None:
        if env.progress is not None:
            env.progress(stage, done, total)
        if time.monotonic() - last[0] > 5 or done == total:
            last[0] = time.monotonic()
            context.log.info(f"embedded {done}/{total} new {what}")

    return progress


@op(required_resource_keys={"ragline"})
def assemble_embeddings(
    context: OpExecutionContext, chunks: dict[str, list[Chunk]], batches: list[int]
) -> build.Embeddings:
    """Dense vectors (from the embedding cache: reused ones, and those the batch steps stored) and BM25 vectors
    of the chunks of every strategy the build asked for; at a fan-out of 1 the new ones are embedded here."""
    env = _env(context)
    selected = build.gather_chunks(chunks, env.request.strategies)
    path = env.settings.data_dir / "embedding_cache.sqlite"
    result = build.embed_chunks(selected, env.request, path, _progress(context, env))
    computed = result.computed + sum(batches)
    result = replace(result, computed=computed, reused=result.reused - sum(batches))
    rate = computed / result.seconds if result.seconds else 0.0
    context.add_output_metadata(
        {
            "chunks": len(selected),
            "computed": computed,
            "reused": result.reused,
            "embedding_steps": max(1, len(batches)),
            "seconds": round(result.seconds, 2),
            "embed_rate_per_s": round(rate, 1),
        }
    )
    return result


@graph_asset(group_name=GROUP)
def embeddings(chunks: dict[str, list[Chunk]]) -> build.Embeddings:
    """Dense vectors (reused from the embedding cache when text and fingerprint are unchanged) and BM25 vectors
    of the chunks of every strategy the build asked for; the new texts' embedding fans out into
    `RAGLINE_EMBEDDING_FANOUT` steps, which the Celery executor runs on several workers at once."""
    done = embedding_batches(chunks).map(embed_batch).collect()
    return assemble_embeddings(chunks, done)


@asset_check(
    asset=embeddings,
    blocking=True,
    required_resource_keys={"ragline"},
    description="Vectors are finite, of the model's dimension, normalised, one per chunk.",
)
def embeddings_are_sound(context: AssetCheckExecutionContext, embeddings: build.Embeddings) -> AssetCheckResult:
    env = _env(context)
    dimension = load_embedder(env.request.embedding_model).dimension
    results = index_checks.embedding_checks(embeddings.dense, len(embeddings.sparse), dimension)
    return _result(results)


def _sentence_texts(env: IngestionEnv, chunks: dict[str, list[Chunk]]) -> list[str]:
    """What the configured sentence ranker will embed of the chunks the build asked for (none for a ranker that
    reads no vectors, or when `RAGLINE_BUILD_SENTENCE_VECTORS` is off)."""
    if not env.settings.build_sentence_vectors or env.settings.sentence_ranker not in VECTOR_RANKERS:
        return []
    return shown_texts(build.gather_chunks(chunks, env.request.strategies))


def _cached(context: AssetExecutionContext, env: IngestionEnv, texts: list[str], stage: str) -> dict[str, Any]:
    """Make the embedding cache hold the vectors of `texts` (embedding those it lacks) and record how many were there
    already, computed, and the seconds it took."""
    started = time.perf_counter()
    path = env.settings.data_dir / "embedding_cache.sqlite"
    reused, computed = build.cache_vectors(texts, env.request, path, _progress(context, env, stage))
    summary = {"texts": len(texts), "reused": reused, "computed": computed}
    context.add_output_metadata({**summary, "seconds": round(time.perf_counter() - started, 2)})
    return summary


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def sentence_vectors(context: AssetExecutionContext, chunks: dict[str, list[Chunk]]) -> dict[str, Any]:
    """The embedding model's vectors of every sentence an answer's ranker may read ("heading: sentence", and a
    sentence with the block it introduces; pipelines/answering/sentence_vectors.py), stored in the embedding cache
    before the version goes live, so no question waits while its candidates are embedded. None when
    `RAGLINE_SENTENCE_RANKER` reads no vectors or `RAGLINE_BUILD_SENTENCE_VECTORS` is off."""
    env = _env(context)
    return _cached(context, env, _sentence_texts(env, chunks), "sentence vectors")


@asset_check(
    asset=sentence_vectors,
    blocking=True,
    required_resource_keys={"ragline"},
    additional_ins={"chunks": AssetIn("chunks")},
    description="The embedding cache holds a vector of every sentence text the answer's ranker may read.",
)
def sentence_vectors_are_stored(
    context: AssetCheckExecutionContext, sentence_vectors: dict[str, Any], chunks: dict[str, list[Chunk]]
) -> AssetCheckResult:
    env = _env(context)
    texts = _sentence_texts(env, chunks)
    missing = build.missing_from_cache(texts, env.request, env.settings.data_dir / "embedding_cache.sqlite")
    result = {"texts": len(texts), "missing": len(missing), "passed": not missing}
    return _result({"sentence_vectors_stored": result})


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def reference_vectors(context: AssetExecutionContext) -> dict[str, Any]:
    """The embedding model's vectors of the general-knowledge passages the off-topic check compares a question with
    (`RAGLINE_TOPIC_REFERENCE`, pipelines/guardrails/topic_gate.py), stored in the embedding cache, so its first
    question does not wait while they are embedded. Nothing while the check is off; after the first build, all reused."""
    env = _env(context)
    return _cached(context, env, reference_passages() if env.settings.topic_reference else [], "reference vectors")


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def shadow_collection(
    context: AssetExecutionContext,
    clean_documents: list[Document],
    chunks: dict[str, list[Chunk]],
    embeddings: build.Embeddings,
) -> IndexVersion:
    """A new shard (or collection) for this content version holding every strategy's chunks; `checked` when
    its point count equals the chunk count. A forced rebuild of the active version writes a fresh location."""
    env = _env(context)
    selected = build.gather_chunks(chunks, env.request.strategies)
    record = build.write_shadow(env.stores, env.request, clean_documents, selected, embeddings, location=env.location)
    context.add_output_metadata(
        {
            "version": record.version,
            "state": record.state,
            "points": record.checks.get("point_count_equals_chunks", {}).get("points", record.chunk_count),
            "location": record.location,
            "timings": MetadataValue.json(record.timings),
        }
    )
    return record


@asset_check(
    asset=shadow_collection,
    blocking=True,
    required_resource_keys={"ragline"},
    description="The shadow index holds one point per chunk.",
)
def shadow_collection_is_complete(
    context: AssetCheckExecutionContext, shadow_collection: IndexVersion
) -> AssetCheckResult:
    check = shadow_collection.checks.get("point_count_equals_chunks", {"passed": shadow_collection.state == "active"})
    return _result({"point_count_equals_chunks": check})


@asset_check(
    asset=shadow_collection,
    blocking=True,
    required_resource_keys={"ragline"},
    # After the sentences' vectors are stored: the served default's dense search reads them (`dense_sentences`).
    additional_ins={"clean_documents": AssetIn("clean_documents"), "sentence_vectors": AssetIn("sentence_vectors")},
    description="Optional: evidence@5 on RAGLINE_GOLDEN_FILE may not fall below the active version's by more "
    "than RAGLINE_SMOKE_MARGIN. Passes as 'skipped: no golden file' when none is configured.",
)
def retrieval_smoke(
    context: AssetCheckExecutionContext,
    shadow_collection: IndexVersion,
    clean_documents: list[Document],
    sentence_vectors: dict[str, Any],
) -> AssetCheckResult:
    env = _env(context)
    started = time.perf_counter()
    result = smoke_check.retrieval_smoke_check(
        env.stores,
        env.settings,
        env.request,
        shadow_collection,
        [d.document_id for d in clean_documents],
        own_shown_texts,
    )
    env.stores.registry.merge(
        shadow_collection.version,
        checks={"retrieval_smoke": result},
        timings={"check_smoke_seconds": round(time.perf_counter() - started, 3)},
    )
    return _result({"retrieval_smoke": result})


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def active_index(
    context: AssetExecutionContext, shadow_collection: IndexVersion, sentence_vectors: dict[str, Any]
) -> dict[str, Any]:
    """The registry pointer (and, on Qdrant, the alias) to the live version, once its sentences' vectors are
    stored; the previous one stays `retired` for rollback; versions past the retention count lose their shard or
    collection."""
    env = _env(context)
    summary, dropped = build.activate(env.stores, shadow_collection, env.settings.index_retention)
    context.add_output_metadata(
        {
            "version": summary.version,
            "chunks": summary.chunk_count,
            "sentence_vectors": sentence_vectors["texts"],
            "dropped_by_retention": ", ".join(dropped) or "none",
            "timings": MetadataValue.json(summary.timings),
        }
    )
    return summary.summary()


INGESTION_ASSETS = [
    source_documents,
    clean_documents,
    chunks,
    embeddings,
    sentence_vectors,
    reference_vectors,
    shadow_collection,
    active_index,
]
INGESTION_CHECKS = [
    languages_allowed,
    chunks_are_sound,
    embeddings_are_sound,
    sentence_vectors_are_stored,
    shadow_collection_is_complete,
    retrieval_smoke,
]
