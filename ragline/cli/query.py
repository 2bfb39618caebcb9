"""`ragline query "..."`: one question from the active index, as text or as the HTTP reply's JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragline.cli.common import print_json, settings_from


def cmd_query(args: argparse.Namespace) -> int:
    from pipelines.access import EVERYTHING, Access
    from pipelines.profiles import open_stores
    from query_graph.service import QueryFailed, QueryService

    settings = settings_from(args)
    stores = open_stores(settings)
    try:
        access = EVERYTHING if args.as_groups is None else Access.of([g for g in args.as_groups.split(",") if g])
        reply = QueryService(settings, stores).answer(args.question, top_k=args.top_k, access=access)
    except QueryFailed as exc:
        if args.json:
            print_json({"error": {"code": exc.code, "message": exc.message}})
        else:
            print(f"ragline: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    finally:
        stores.close()
    if args.json:
        print_json(reply)
    else:
        print(reply["answer"])
        for c in reply["citations"]:
            print(f"  [C:{c['chunk_id']}] {c['document_id']}#{c['anchor']}  {c['title']}")
        print(f"  ({reply['status']}, {reply['timings_ms']['total']:.0f} ms, cache {reply['cache']})")
    return 0


def register(commands: Any) -> None:
    query = commands.add_parser("query", help="answer one question from the active index")
    query.add_argument("question")
    query.add_argument("--top-k", type=int)
    query.add_argument("--json", action="store_true", help="print the same JSON as the HTTP reply")
    query.add_argument(
        "--as-groups", metavar="GROUPS", help="answer as a caller of these access groups (default: every group)"
    )
    query.set_defaults(func=cmd_query)
