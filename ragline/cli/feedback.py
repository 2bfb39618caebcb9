"""`ragline feedback export`: the questions readers rated down, and those ragline could not answer, as golden-set
candidates (../shared/golden/README.md's JSONL format) for a person to complete with the expected reply, the
evidence and the facts."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragline.cli.common import settings_from


def candidate(row: dict[str, Any]) -> dict[str, Any]:
    """One golden-set line: the question and the pages ragline retrieved; `type`, `expected`, `evidence` and
    `facts` are left for the person who checks the pages, and `feedback` says why it is here."""
    ratings = [f for f in row["feedback"] if f.get("rating")]
    return {
        "id": f"fb-{row['reply_id'][:12]}",
        "question": row["standalone_question"] or row["question"],
        "lang": row["language"] or "",
        "type": "",
        "expected": "",
        "pages": list(row["pages"]),
        "evidence": [],
        "facts": [],
        "feedback": {
            "reply_status": row["status"],
            "ratings": [f["rating"] for f in ratings],
            "comments": [f["comment"] for f in ratings if f.get("comment")],
            "answer": row["answer"],
            "asked_at": row["created_at"].isoformat(),
            "index_version": row["index_version"],
        },
    }


def cmd_export(args: argparse.Namespace) -> int:
    from pipelines.adapters.reply_log import ReplyLog
    from pipelines.ports import StoreUnavailable
    from pipelines.profiles import open_stores

    settings = settings_from(args)
    stores = open_stores(settings)
    replies = ReplyLog(stores.registry.dsn, stores.registry.schema, settings.reply_retention_days)
    try:
        rows = replies.candidates(since_days=args.days)
    except StoreUnavailable as exc:
        print(f"ragline: {exc}", file=sys.stderr)
        return 2
    finally:
        replies.close()
        stores.close()
    lines = [json.dumps(candidate(row), ensure_ascii=False) for row in rows]
    if args.out is None:
        print("\n".join(lines))
    else:
        args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        print(f"{len(lines)} golden-set candidates written to {args.out}", file=sys.stderr)
    return 0


def register(commands: Any) -> None:
    feedback = commands.add_parser("feedback", help="what readers said of the replies")
    actions = feedback.add_subparsers(dest="action", required=True)
    export = actions.add_parser(
        "export", help="down-rated and unanswered questions as golden-set candidates (JSONL) to complete by hand"
    )
    export.add_argument("--out", type=Path, help="the JSONL file to write (default: standard output)")
    export.add_argument("--days", type=float, help="only replies of the last DAYS days")
    export.set_defaults(func=cmd_export)
