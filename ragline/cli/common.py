"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipelines.settings import Settings


def settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("source", "include", "exclude", "port", "host", "workers"):
        value = getattr(args, name, None)
        if value:
            overrides[name] = value
    return Settings(**overrides)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help="directory to index (default: RAGLINE_SOURCE, or the project's docs/)")
    parser.add_argument("--include", action="append", help="glob of documents to index, relative to the source")
    parser.add_argument("--exclude", action="append", help="glob of documents to skip")
