"""`ragline serve`: build the index when the source changed, then serve the HTTP API."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import Any

from pipelines.settings import Settings
from ragline.cli.common import settings_from, source_options


def ensure_index(settings: Settings, stores: Any, force: bool = False) -> Any:
    """Build the index of the settings' source through the Dagster assets when it is not the active one."""
    from assets.build import build_index
    from pipelines.ingestion.build import BuildRequest

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


def in_process_launcher(settings: Settings, stores: Any) -> Any:
    """The admin API's in-process index build: the Dagster assets, materialised in this process."""

    def launch(body: Any) -> dict[str, Any]:
        from assets.build import build_index
        from pipelines.ingestion.build import BuildRequest

        strategies = (body.strategy,) if body.strategy else None
        request = BuildRequest.from_settings(settings, source=body.source, strategies=strategies)
        outcome = build_index(settings, stores, request, force=body.force)
        return {
            "version": outcome.version,
            "built": outcome.built,
            "run_id": outcome.run_id,
            "seconds": round(outcome.seconds, 3),
            "summary": outcome.summary,
        }

    return launch


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve; with `RAGLINE_GENERATOR=local`, the packaged model's server runs as a child of this process
    for as long as it serves (pipelines/adapters/local_model.py)."""
    from pipelines.adapters.local_model import LocalModelUnavailable, local_model

    settings = settings_from(args)
    with ExitStack() as stack:
        if settings.local_llm:
            try:
                print("ragline: starting the local model ...", file=sys.stderr, flush=True)
                settings, model = stack.enter_context(local_model(settings))
            except LocalModelUnavailable as exc:
                print(f"ragline: {exc}", file=sys.stderr, flush=True)
                return 1
            assert model is not None
            print(
                f"ragline: local model {settings.llm_model} serving at {settings.llm_api_base} (pid {model.pid}, "
                f"log {model.log_file}); it stops with ragline",
                file=sys.stderr,
                flush=True,
            )
        return _serve(args, settings)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from assets.build import BuildFailed
    from pipelines.ingestion.loaders import SourceError
    from pipelines.profiles import open_stores
    from server.app import create_app
    from server.tokens import load_or_create_token

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
        app = create_app(settings, stores, build_launcher=in_process_launcher(settings, stores))
        token = load_or_create_token(settings)
        url = f"http://{settings.host}:{settings.port}"
        print(f"ragline: serving on {url}\nragline: access token {token}", file=sys.stderr, flush=True)
        print(
            f"ragline: try  curl -s -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' "
            f'-d \'{{"question": "How do I build the index?"}}\' {url}/v1/query',
            file=sys.stderr,
            flush=True,
        )
        # At log level "warning" uvicorn's access lines are dropped anyway, but it still formats their
        # client address and quoted path for every response: ~1.5% of a cache hit's CPU (py-spy).
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", access_log=False)
    finally:
        stores.close()
    return 0


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="build the index when needed, then serve the HTTP API")
    source_options(serve)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--no-build", action="store_true", help="serve the active index without checking the source")
    serve.set_defaults(func=cmd_serve)
