"""GET /v1/passages/{chunk_id}: the text a citation points at, from the active index."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from server.deps import QueryScope, ServiceDep
from server.errors import ApiError
from server.schemas import ERROR_RESPONSES, NOT_FOUND

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope], responses=ERROR_RESPONSES)


@router.get("/passages/{chunk_id}", responses=NOT_FOUND)
async def passage(chunk_id: str, service: ServiceDep) -> dict[str, Any]:
    """The cited chunk: title, heading path, anchor, source and text (what a citation opens)."""
    version, index = await run_in_threadpool(service.active)
    found = await run_in_threadpool(index.get_chunks, [chunk_id])
    if not found:
        raise ApiError(404, "not_found", f"no chunk {chunk_id!r} in the active index {version.version}")
    chunk = found[0]
    return {
        "chunk_id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "title": chunk.title,
        "heading_path": list(chunk.heading_path),
        "anchor": chunk.anchor,
        "source_uri": chunk.source_uri,
        "language": chunk.language,
        "text": chunk.text,
        "content_version": version.version,
    }
