"""Ingestion assets: source documents to an active index. Each asset is a thin shell over `pipelines`."""

import time
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetExecutionContext,
    MetadataValue,
    asset,
    asset_check,
)

from assets.resources import IngestionEnv, IngestionResource
from pipelines import indexing
from pipelines.documents import Chunk, Document
from pipelines.embedders import load_embedder
from pipelines.registry import IndexVersion

GROUP = "ingestion"


def _env(context: Any) -> IngestionEnv:
    """In-process builds pass an `IngestionEnv`; `dagster dev` passes the configurable resource."""
    resource = context.resources.ragline
    return resource.env if isinstance(resource, IngestionResource) else resource


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def source_documents(context: AssetExecutionContext) -> list[Document]:
    """Every document of the source, with its id (path relative to the source root) and content hash."""
    env = _env(context)
    documents = indexing.fetch_documents(env.request)
    context.add_output_metadata({"documents": len(documents), "source": env.request.source})
    return documents


@asset(group_name=GROUP)
def clean_documents(context: AssetExecutionContext, source_documents: list[Document]) -> list[Document]:
    """Documents with markup resolved, titles found and language detected."""
    documents = indexing.clean_documents(source_documents)
    languages: dict[str, int] = {}
    for d in documents:
        languages[d.language] = languages.get(d.language, 0) + 1
    context.add_output_metadata({"documents": len(documents), "languages": MetadataValue.json(languages)})
    return documents


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def chunks(context: AssetExecutionContext, clean_documents: list[Document]) -> list[Chunk]:
    """Chunks of every configured strategy."""
    env = _env(context)
    out: list[Chunk] = []
    for strategy in env.request.strategies:
        out.extend(indexing.chunk_documents(clean_documents, env.request, strategy))
    tokens = sum(c.token_count for c in out)
    context.add_output_metadata({"chunks": len(out), "tokens": tokens, "strategies": ", ".join(env.request.strategies)})
    return out


@asset_check(
    asset=chunks,
    blocking=True,
    required_resource_keys={"ragline"},
    description="Chunks exist, have unique ids, are not empty and fit the token limit.",
)
def chunks_are_sound(context: AssetCheckExecutionContext, chunks: list[Chunk]) -> AssetCheckResult:
    env = _env(context)
    results = indexing.check_chunks(chunks, env.request.max_tokens)
    return AssetCheckResult(
        passed=all(r["passed"] for r in results.values()), metadata={"results": MetadataValue.json(results)}
    )


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def embeddings(context: AssetExecutionContext, chunks: list[Chunk]) -> indexing.Embeddings:
    """Dense vectors (reused from the embedding cache when text and fingerprint are unchanged) and BM25 vectors."""
    env = _env(context)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last[0] > 5 or done == total:
            last[0] = time.monotonic()
            context.log.info(f"embedded {done}/{total} chunks")

    result = indexing.embed_chunks(chunks, env.request, env.settings.data_dir / "embedding_cache.sqlite", progress)
    rate = result.computed / result.seconds if result.seconds else 0.0
    context.add_output_metadata(
        {
            "computed": result.computed,
            "reused": result.reused,
            "seconds": round(result.seconds, 2),
            "embed_rate_per_s": round(rate, 1),
        }
    )
    return result


@asset_check(
    asset=embeddings,
    blocking=True,
    required_resource_keys={"ragline"},
    description="Vectors are finite, of the model's dimension and normalised.",
)
def embeddings_are_sound(context: AssetCheckExecutionContext, embeddings: indexing.Embeddings) -> AssetCheckResult:
    env = _env(context)
    results = indexing.check_embeddings(embeddings, load_embedder(env.request.embedding_model).dimension)
    return AssetCheckResult(
        passed=all(r["passed"] for r in results.values()), metadata={"results": MetadataValue.json(results)}
    )


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def shadow_collection(
    context: AssetExecutionContext,
    source_documents: list[Document],
    clean_documents: list[Document],
    chunks: list[Chunk],
    embeddings: indexing.Embeddings,
) -> IndexVersion:
    """A new shard (or collection) for this content version, registered as `building`, then `checked`."""
    env = _env(context)
    stores = env.stores
    version = indexing.version_of(env.request, source_documents)
    location = stores.location_for(version)
    record = indexing.new_version_record(version, env.request, clean_documents, chunks, location, embeddings.avg_length)
    active = stores.registry.active()
    if active is not None and active.version == version:
        context.log.info(f"version {version} is already active; leaving it as it is")
        return active
    stores.registry.record(record)
    started = time.perf_counter()
    try:
        writer = stores.index_writer(location, embeddings.dense.shape[1])
        writer.upsert(chunks, embeddings.dense, embeddings.sparse)
        count = writer.count()
        writer.close()
    except Exception:
        stores.registry.update(version, state="failed")
        raise
    checks = {"point_count_equals_chunks": {"passed": count == len(chunks), "points": count, "chunks": len(chunks)}}
    record.checks, record.timings = (
        checks,
        {"write_seconds": round(time.perf_counter() - started, 3), "embed_seconds": round(embeddings.seconds, 3)},
    )
    record.state = "checked" if checks["point_count_equals_chunks"]["passed"] else "failed"
    stores.registry.update(version, state=record.state, checks=record.checks, timings=record.timings)
    context.add_output_metadata({"version": version, "points": count, "location": location})
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
    return AssetCheckResult(passed=bool(check["passed"]), metadata={"result": MetadataValue.json(check)})


@asset(group_name=GROUP, required_resource_keys={"ragline"})
def active_index(context: AssetExecutionContext, shadow_collection: IndexVersion) -> dict[str, Any]:
    """The registry pointer to the live version; the previous one stays `retired`, ready for rollback."""
    env = _env(context)
    stores = env.stores
    if shadow_collection.state != "active":
        activated = stores.registry.activate(shadow_collection.version)
        stores.on_activate(activated.location)
    summary = stores.registry.get(shadow_collection.version)
    assert summary is not None
    context.add_output_metadata({"version": summary.version, "chunks": summary.chunk_count})
    return summary.summary()


INGESTION_ASSETS = [source_documents, clean_documents, chunks, embeddings, shadow_collection, active_index]
INGESTION_CHECKS = [chunks_are_sound, embeddings_are_sound, shadow_collection_is_complete]
