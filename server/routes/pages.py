"""The web pages: `/` (chat) and `/console` (operators), plain HTML and JavaScript in server/static/."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent.parent / "static"
router = APIRouter(include_in_schema=False)


@router.get("/")
def chat_page() -> FileResponse:
    return FileResponse(STATIC / "index.html")


@router.get("/console")
def console_page() -> FileResponse:
    return FileResponse(STATIC / "console.html")


def static_files() -> StaticFiles:
    return StaticFiles(directory=STATIC)
