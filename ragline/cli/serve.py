"""`ragline serve`: build the index when the source changed, then serve the HTTP API."""

from __future__ import annotations

import argparse
import os
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


# The settings every server process of `ragline serve --workers N` starts from, as JSON (the parent's, with the
# stores it resolved): a worker is a fresh interpreter and must not read another environment or start services.
WORKER_SETTINGS = "RAGLINE_SERVE_WORKER_SETTINGS"


class WorkersRefused(ValueError):
    """`--workers N` with a store that only one process can use, chosen explicitly."""


def in_process_launcher(settings: Settings, stores: Any | None = None) -> Any:
    """The admin API's in-process index build: the Dagster assets, materialised in this process (with stores of
    its own for the build when none are given: a worker process of `--workers N`)."""

    def launch(body: Any, cancelled: Any = None) -> dict[str, Any]:
        from assets.build import build_index
        from pipelines.ingestion.build import BuildRequest
        from pipelines.profiles import open_stores

        strategies = (body.strategy,) if body.strategy else None
        request = BuildRequest.from_settings(settings, source=body.source, strategies=strategies)
        with ExitStack() as stack:
            own = stores
            if own is None:
                own = open_stores(settings)
                stack.callback(own.close)
            outcome = build_index(settings, own, request, force=body.force, cancelled=cancelled)
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


def shared_settings(settings: Settings) -> tuple[Settings, dict[str, str]]:
    """The settings of several server processes: every store in PostgreSQL, Redis or a Qdrant server, which all of
    them read, so that nothing a user sees depends on which process answered. A store only one process can use
    (a Qdrant Edge shard, a limit counted in memory) is switched to its shared kind when left at its default, and
    refused (`WorkersRefused`) when chosen explicitly. Returns the settings and what was switched."""
    explicit, switched, refused = settings.model_fields_set, {}, []
    wanted = [
        (
            "vector_store",
            settings.vector_store == "qdrant" and settings.qdrant_url is None,
            "postgres",
            "RAGLINE_VECTOR_STORE=qdrant without RAGLINE_QDRANT_URL is a shard one process opens",
        ),
        (
            "semantic_cache_store",
            settings.semantic_cache and settings.semantic_cache_store == "edge",
            "postgres",
            "RAGLINE_SEMANTIC_CACHE_STORE=edge is a shard one process opens",
        ),
        (
            "rate_limit_store",
            settings.rate_limit_per_second > 0 and settings.rate_limit_store == "memory",
            "redis",
            "RAGLINE_RATE_LIMIT_STORE=memory counts in each process (N processes allow N times the limit)",
        ),
    ]
    for name, per_process, shared, why in wanted:
        if not per_process:
            continue
        if name in explicit:
            refused.append(why)
        else:
            switched[name] = shared
    if refused:
        raise WorkersRefused(f"--workers {settings.workers} needs stores every process shares: " + "; ".join(refused))
    return settings.model_copy(update=switched), switched


def worker_app() -> Any:
    """One server process of `ragline serve --workers N` (uvicorn's factory): the parent's settings, the parent's
    stores (it built the index and started any embedded services before the workers)."""
    from pipelines.logs import configure_logging

    settings = Settings.model_validate_json(os.environ[WORKER_SETTINGS])
    configure_logging(settings.log_level)  # before the server's imports log anything
    from server.app import create_app

    return create_app(settings, None, build_launcher=in_process_launcher(settings))


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from assets.build import BuildFailed
    from pipelines.ingestion.loaders import SourceError
    from pipelines.profiles import open_stores
    from server.app import create_app
    from server.tokens import load_or_create_token

    if settings.workers > 1:
        try:
            settings, switched = shared_settings(settings)
        except WorkersRefused as exc:
            print(f"ragline: {exc}", file=sys.stderr, flush=True)
            return 2
        for name, value in switched.items():
            print(f"ragline: {settings.workers} processes share one {name}: {value}", file=sys.stderr, flush=True)
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
        active = stores.registry.active() if settings.workers > 1 else None
        if active is not None and not stores.read_by_every_process(active.location):
            print(
                f"ragline: the active index {active.version} is a Qdrant Edge shard, which one process opens: "
                "serve without --no-build so that it is rebuilt into the shared store first",
                file=sys.stderr,
                flush=True,
            )
            return 1
        token = load_or_create_token(settings)
        url = f"http://{settings.host}:{settings.port}"
        workers = f" with {settings.workers} processes" if settings.workers > 1 else ""
        print(f"ragline: serving on {url}{workers}\nragline: access token {token}", file=sys.stderr, flush=True)
        print(
            f"ragline: try  curl -s -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' "
            f'-d \'{{"question": "How do I build the index?"}}\' {url}/v1/query',
            file=sys.stderr,
            flush=True,
        )
        # At log level "warning" uvicorn's access lines are dropped anyway, but it still formats their
        # client address and quoted path for every response: ~1.5% of a cache hit's CPU (py-spy).
        if settings.workers > 1:
            # The workers connect to the stores this process opened (and, embedded, started): they get their
            # addresses, never start services of their own. uvicorn restarts a worker that dies.
            worker = settings.model_copy(update={"postgres_dsn": stores.postgres_dsn, "redis_url": stores.cache.url})
            os.environ[WORKER_SETTINGS] = worker.model_dump_json()
            uvicorn.run(
                "ragline.cli.serve:worker_app",
                factory=True,
                workers=settings.workers,
                host=settings.host,
                port=settings.port,
                log_level="warning",
                access_log=False,
                timeout_worker_healthcheck=60,  # a worker loading its models answers the supervisor late
            )
        else:
            app = create_app(settings, stores, build_launcher=in_process_launcher(settings, stores))
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
    serve.add_argument(
        "--workers",
        type=int,
        help="server processes (default: RAGLINE_WORKERS, 1); more than one keep every store in PostgreSQL/Redis",
    )
    serve.set_defaults(func=cmd_serve)
