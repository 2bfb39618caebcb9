"""Operator routes (scope `admin`): index versions, builds, rollback, cache flush, console data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from pipelines.adapters.redis_cache import CacheUnavailable
from pipelines.adapters.reply_log import ReplyLog
from pipelines.ingestion.sources import source_allowed
from pipelines.ports import StoreUnavailable
from pipelines.settings import Settings
from server.builds import TERMINAL, BuildRequestBody, BuildTracker, NoLauncher
from server.deps import AdminScope, ServiceDep, SettingsDep
from server.errors import ApiError
from server.gaps import gap_report
from server.schemas import ERROR_RESPONSES, NOT_FOUND

router = APIRouter(tags=["admin"], dependencies=[AdminScope], responses=ERROR_RESPONSES)


class BuildBody(BaseModel):
    model_config = ConfigDict(strict=True)  # `"force": 0` is not a boolean: 422

    source: str | None = Field(None, description="Directory to index (default: the server's source).")
    strategy: str | None = Field(None, description="Chunking strategy (default: the server's).")
    force: bool = Field(False, description="Rebuild even when the content is unchanged.")


def _registry_call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except StoreUnavailable as exc:
        raise ApiError(503, "registry_unavailable", str(exc)) from exc


@router.get("/v1/index")
async def index_status(service: ServiceDep) -> dict[str, Any]:
    """The active index version: content version, fingerprint, documents, chunks, checks."""
    version, _ = await run_in_threadpool(service.active)
    return version.summary()


@router.get("/v1/index/versions")
async def index_versions(service: ServiceDep) -> dict[str, Any]:
    """Every recorded index version, newest first, with its state (active, retired, failed, ...)."""
    versions = await run_in_threadpool(_registry_call, service.stores.registry.versions)
    return {"versions": [v.summary() for v in versions]}


@router.post("/v1/admin/index/builds", status_code=202)
async def start_build(body: BuildBody, request: Request, settings: SettingsDep) -> dict[str, Any]:
    """Launch the Dagster ingestion (webserver when configured, in-process otherwise); poll the build by id.
    Only the server's source and those `RAGLINE_BUILD_SOURCES` lists may be named (403 otherwise)."""
    tracker: BuildTracker = request.app.state.builds
    if body.source is not None and not source_allowed(body.source, settings):
        allowed = ", ".join([str(settings.source), *settings.build_sources])
        raise ApiError(
            403,
            "source_not_allowed",
            f"a build may index only the server's source or a source RAGLINE_BUILD_SOURCES lists ({allowed}); "
            f"{body.source!r} is neither",
        )
    try:
        build, started = await run_in_threadpool(
            tracker.start, BuildRequestBody(body.source, body.strategy, body.force)
        )
    except NoLauncher as exc:
        raise ApiError(503, "no_build_launcher", str(exc)) from exc
    except StoreUnavailable as exc:
        raise ApiError(503, "registry_unavailable", str(exc)) from exc
    return {**build.as_dict(), "started": started}


@router.get("/v1/admin/index/builds/{build_id}", responses=NOT_FOUND)
async def get_build(build_id: str, request: Request) -> dict[str, Any]:
    """State of a build started over this API: queued, running, succeeded or failed (with the error)."""
    build = await run_in_threadpool(_registry_call, request.app.state.builds.get, build_id)
    if build is None:
        raise ApiError(404, "not_found", f"no build {build_id!r} on this deployment")
    return build.as_dict()


@router.post("/v1/admin/index/builds/{build_id}/cancel", status_code=202, responses=NOT_FOUND)
async def cancel_build(build_id: str, request: Request) -> dict[str, Any]:
    """Ask a queued or running build to stop, in whichever server process runs it (or, through the Dagster
    webserver, its run worker): it ends `cancelled` at its next check and the active index stays. 409 when the
    build has finished already."""
    tracker: BuildTracker = request.app.state.builds
    build = await run_in_threadpool(_registry_call, tracker.cancel, build_id)
    if build is None:
        raise ApiError(404, "not_found", f"no build {build_id!r} on this deployment")
    if build.state in TERMINAL:
        raise ApiError(409, "build_finished", f"build {build_id} has finished already ({build.state})")
    return build.as_dict()


@router.post("/v1/admin/index/{version}/activate", responses=NOT_FOUND)
async def activate(version: str, service: ServiceDep) -> dict[str, Any]:
    """Make a checked or retired version active (rollback); the previous one stays for the next rollback."""
    registry = service.stores.registry
    target = await run_in_threadpool(_registry_call, registry.get, version)
    if target is None:
        raise ApiError(404, "not_found", f"no index version {version!r}")
    if target.fingerprint != service.embedder.fingerprint.digest:
        raise ApiError(
            409, "index_fingerprint_mismatch", f"{version} was embedded with another model than this server's"
        )
    try:
        activated = await run_in_threadpool(_registry_call, registry.activate, version)
    except ValueError as exc:
        raise ApiError(409, "not_activatable", str(exc)) from exc
    await run_in_threadpool(service.stores.on_activate, activated.location)
    return activated.summary()


@router.post("/v1/admin/cache/flush")
async def flush_cache(service: ServiceDep, settings: SettingsDep) -> dict[str, Any]:
    """Delete every answer-cache entry of this deployment (keys under the cache prefix)."""
    try:
        deleted = await run_in_threadpool(service.stores.cache.flush_prefix, settings.cache_prefix)
    except CacheUnavailable as exc:
        raise ApiError(503, "cache_unavailable", str(exc)) from exc
    return {"deleted": deleted, "prefix": settings.cache_prefix}


@router.get("/v1/admin/gaps")
async def content_gaps(
    request: Request,
    service: ServiceDep,
    settings: SettingsDep,
    hours: Annotated[float, Query(gt=0, le=24 * 366, description="The window: the last HOURS hours.")] = 168.0,
    limit: Annotated[int, Query(ge=1, le=200, description="Groups returned, largest first.")] = 50,
) -> dict[str, Any]:
    """What the docs fail to answer: questions answered `no_answer`, clarified, rated down, or answered on
    retrieval CRAG did not grade `correct`, over the window, grouped by meaning (count, a representative
    question, other wordings, reasons, the pages retrieved for them most often)."""
    replies: ReplyLog = request.app.state.reply_log

    def report() -> dict[str, Any]:
        rows = replies.gap_replies(hours, limit=settings.gaps_max_questions)
        return gap_report(rows, service.embedder, settings.gaps_similarity, limit)

    try:
        found = await run_in_threadpool(report)
    except StoreUnavailable as exc:
        raise ApiError(503, "gaps_unavailable", str(exc)) from exc
    return {"hours": hours, "similarity": settings.gaps_similarity, **found}


@router.get("/v1/admin/stats")
async def stats(request: Request) -> dict[str, Any]:
    """Per-node latency, cache hits, guardrail blocks and CRAG actions since start (for the console)."""
    return request.app.state.metrics.snapshot()


def latest_ab_pointer(settings: Settings) -> Path | None:
    """The A/B report `ragline eval ab` last wrote, wherever its --out put it (the pointer in the data dir)."""
    try:
        path = Path(json.loads(settings.ab_pointer_file.read_text(encoding="utf-8"))["json"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if path.exists() else None


def latest_result(settings: Settings) -> dict[str, Any]:
    """The latest evaluation results file: RAGLINE_EVALS_RESULTS, else the report the last `ragline eval ab`
    of this data dir wrote (its pointer). Nothing else: the repository carries no results of its own."""
    path = settings.evals_results or latest_ab_pointer(settings)
    if path is None or not Path(path).exists():
        return {"file": None, "results": None}
    try:
        return {"file": str(path), "results": json.loads(Path(path).read_text())}
    except ValueError as exc:
        raise ApiError(500, "evals_unreadable", f"{path}: {exc}") from exc


@router.get("/v1/admin/evals/latest")
async def latest_evals(settings: SettingsDep) -> dict[str, Any]:
    # Choosing reads every A/B report's stamp: file work kept off the event loop.
    return await run_in_threadpool(latest_result, settings)
