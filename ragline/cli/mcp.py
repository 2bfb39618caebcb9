"""`ragline mcp`: the MCP server over stdio, for a desktop assistant or an IDE that starts it itself."""

from __future__ import annotations

import argparse
from typing import Any

from ragline.cli.common import settings_from


def cmd_mcp(args: argparse.Namespace) -> int:
    from pipelines.access import EVERYTHING
    from pipelines.profiles import open_stores
    from query_graph.service import QueryService
    from server.mcp_server import build_mcp

    settings = settings_from(args)
    stores = open_stores(settings)
    try:
        service = QueryService(settings, stores)
        service.warm()
        # stdout carries the protocol; ragline's logs go to stderr (pipelines/logs.py).
        build_mcp(lambda: service, lambda: settings, lambda: EVERYTHING).run("stdio")
    finally:
        stores.close()
    return 0


def register(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve the MCP tools search_docs and ask_docs over stdio, from the active index"
    )
    mcp.set_defaults(func=cmd_mcp)
