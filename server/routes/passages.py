"""GET /v1/passages/{chunk_id}: the text a citation points at, from the active index."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from server.deps import QueryScope, ServiceDep, caller_access
from server.errors import ApiError
from server.schemas import ERROR_RESPONSES, NOT_FOUND

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope], responses=ERROR_RESPONSES)


@router.get("/passages/{chunk_id}", responses=NOT_FOUND)
async def passage(chunk_id: str, service: ServiceDep, request: Request) -> dict[str, Any]:
    """The cited chunk: title, heading path, anchor, source and text (what a citation opens). A chunk of a page
    the token's groups may not read is answered as one that does not exist."""
    version, index = await run_in_threadpool(service.active, caller_access(request))
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
