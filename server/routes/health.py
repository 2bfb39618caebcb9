"""Liveness, readiness and the active index."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from query_graph.service import QueryFailed
from server.deps import Authorized, ServiceDep
from server.errors import ApiError

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(service: ServiceDep) -> dict[str, Any]:
    """Registry reachable, an index active and loaded with this server's embedder."""
    try:
        index = service.check_ready()
    except QueryFailed as exc:
        raise ApiError(503, exc.code, exc.message) from exc
    return {"status": "ready", "index": index, "cache": "up" if service.stores.cache.ping() else "down"}


@router.get("/v1/index", dependencies=[Authorized])
def index_status(service: ServiceDep) -> dict[str, Any]:
    """The active index version: content version, fingerprint, documents, chunks, checks."""
    version, _ = service.active()
    return version.summary()
