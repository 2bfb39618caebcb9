"""Liveness, readiness and the Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from query_graph.service import QueryFailed
from server.deps import ServiceDep
from server.errors import ApiError

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(service: ServiceDep) -> dict[str, Any]:
    """Registry reachable, an index active and loaded with this server's embedder."""
    try:
        index = await run_in_threadpool(service.check_ready)
    except QueryFailed as exc:
        raise ApiError(503, exc.code, exc.message) from exc
    cache_up = await run_in_threadpool(service.stores.cache.ping)
    return {"status": "ready", "index": index, "cache": "up" if cache_up else "down"}


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format: HTTP, node latency, first sentence, caches, guardrails, CRAG, providers."""
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
