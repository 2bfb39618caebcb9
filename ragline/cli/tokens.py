"""`ragline tokens create|list|revoke`: access tokens of the HTTP API, kept hashed in PostgreSQL with their scopes,
access groups, expiry and rate limit (pipelines/adapters/token_table.py). Running servers see a change within
`RAGLINE_TOKEN_CACHE_SECONDS`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ragline.cli.common import print_json, settings_from


@contextmanager
def _table(args: argparse.Namespace) -> Iterator[Any]:
    """The token table of the settings' registry, closed (with the stores) after the block."""
    from pipelines.adapters.token_table import TokenTable
    from pipelines.profiles import open_stores

    stores = open_stores(settings_from(args))
    table = TokenTable(stores.registry.dsn, stores.registry.schema)
    try:
        yield table
    finally:
        table.close()
        stores.close()


def _expiry(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--expires {text!r}: give an ISO 8601 time with its zone, e.g. 2027-01-31T00:00:00Z"
        ) from None


def cmd_tokens_create(args: argparse.Namespace) -> int:
    from pipelines.ports import StoreUnavailable

    scopes = args.scope or ["query", "feedback"]
    groups = [g for g in (args.groups or "").split(",") if g.strip()]
    try:
        with _table(args) as table:
            token, record = table.create(args.name, scopes, groups, _expiry(args.expires), args.rate, args.burst)
    except (ValueError, StoreUnavailable) as exc:
        print(f"ragline tokens create: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print_json({"token": token, **record.as_dict()})
        return 0
    print(
        f"ragline: token {record.name!r}, scopes {list(record.scopes)}, groups {list(record.groups) or ['public']}"
        " (stored hashed; shown once):",
        file=sys.stderr,
    )
    print(token)
    return 0


def cmd_tokens_list(args: argparse.Namespace) -> int:
    from pipelines.ports import StoreUnavailable

    try:
        with _table(args) as table:
            records = table.list(include_revoked=args.all)
    except StoreUnavailable as exc:
        print(f"ragline tokens list: {exc}", file=sys.stderr)
        return 1
    rows = [r.as_dict() for r in records]
    if args.json:
        print_json({"tokens": rows})
        return 0
    for r in rows:  # the digest's start tells two tokens apart; the token itself is not stored
        state = f"revoked {r['revoked_at']}" if r["revoked_at"] else f"expires {r['expires_at'] or 'never'}"
        print(
            f"{r['name']}\t{','.join(r['scopes'])}\tgroups {','.join(r['groups']) or 'public'}\t{state}"
            f"\tsha256 {r['sha256_prefix']}…"
        )
    if not rows:
        print("ragline: no tokens besides the bootstrap token", file=sys.stderr)
    return 0


def cmd_tokens_revoke(args: argparse.Namespace) -> int:
    from pipelines.ports import StoreUnavailable

    try:
        with _table(args) as table:
            table.revoke(args.name)
    except (ValueError, StoreUnavailable) as exc:
        print(f"ragline tokens revoke: {exc}", file=sys.stderr)
        return 1
    seconds = settings_from(args).token_cache_seconds
    print(f"ragline: revoked {args.name!r}; every server refuses it within {seconds:g} s")
    return 0


def register(commands: Any) -> None:
    tokens = commands.add_parser("tokens", aliases=["token"], help="access tokens of the HTTP API (in PostgreSQL)")
    actions = tokens.add_subparsers(dest="tokens_command", required=True)
    create = actions.add_parser("create", aliases=["add"], help="create a token; it is printed once")
    create.add_argument("name")
    create.add_argument(
        "--scope",
        action="append",
        choices=["query", "feedback", "admin"],
        help="repeatable; default: query and feedback",
    )
    create.add_argument(
        "--groups", help="access groups, comma-separated (`public` is implied; `*`: every group); default: public"
    )
    create.add_argument("--expires", help="ISO 8601 time with zone after which the token stops working")
    create.add_argument("--rate", type=float, help="requests per second for this token (default: the server's)")
    create.add_argument("--burst", type=int, help="requests at once for this token (default: the server's)")
    create.add_argument("--json", action="store_true", help="print the token and its record as JSON")
    create.set_defaults(func=cmd_tokens_create)
    listing = actions.add_parser("list", help="names, scopes, groups, expiry and digest prefixes")
    listing.add_argument("--all", action="store_true", help="revoked tokens too")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_tokens_list)
    revoke = actions.add_parser("revoke", help="revoke a token by name")
    revoke.add_argument("name")
    revoke.set_defaults(func=cmd_tokens_revoke)
