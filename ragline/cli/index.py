"""`ragline index ...`: build, status, versions, activate (rollback)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragline.cli.common import print_json, settings_from, source_options


class ProgressBar:
    """A bar on a terminal's stderr; a line every 10% when stderr is a file or pipe."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, stage: str, done: int, total: int) -> None:
        share = done / total if total else 1.0
        if self.tty:
            bar = "#" * int(share * 30)
            print(f"\rragline: {stage} [{bar:<30}] {done}/{total}", end="", file=sys.stderr, flush=True)
            if done >= total:
                print(file=sys.stderr)
        elif int(share * 10) > self.shown:
            self.shown = int(share * 10)
            print(f"ragline: {stage} {done}/{total}", file=sys.stderr, flush=True)


def cmd_index_build(args: argparse.Namespace) -> int:
    from assets.build import BuildFailed, build_index
    from pipelines.ingestion.build import BuildRequest
    from pipelines.ingestion.loaders import SourceError
    from pipelines.profiles import open_stores

    settings = settings_from(args)
    if args.strategy:
        settings = settings.model_copy(update={"build_strategies": args.strategy})
    if args.executor == "celery":
        return _build_on_celery(settings, args)
    if args.executor == "dagster":
        return _build_on_dagster(settings, args)
    stores = open_stores(settings)
    try:
        request = BuildRequest.from_settings(settings)
        print(f"ragline: indexing {request.source} (only if it changed) ...", file=sys.stderr, flush=True)
        outcome = build_index(settings, stores, request, force=args.force, progress=ProgressBar())
        verb = "built and activated" if outcome.built else "already active:"
        print(
            f"ragline: {verb} {outcome.version} ({outcome.summary['chunks']} chunks, {outcome.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    except (BuildFailed, SourceError, ValueError) as exc:
        print(f"ragline: {exc}", file=sys.stderr)
        return 1
    finally:
        stores.close()
    if args.json:
        print_json({"version": outcome.version, "built": outcome.built, "run_id": outcome.run_id, **outcome.summary})
    return 0


def _build_on_dagster(settings: Any, args: argparse.Namespace) -> int:
    """The build as a run of the Dagster webserver at `RAGLINE_DAGSTER_URL`, executed by its run worker and shown in
    its UI while it runs, as a build over the admin API is; Ctrl-C terminates the run."""
    import threading

    from pipelines.ports import BuildCancelled
    from server.builds import BuildRequestBody, dagster_graphql_launcher

    if not settings.dagster_url:
        print(
            "ragline: --executor dagster needs RAGLINE_DAGSTER_URL (the webserver of `ragline dagster`)",
            file=sys.stderr,
        )
        return 2
    strategy = args.strategy[0] if args.strategy and len(args.strategy) == 1 else None
    body = BuildRequestBody(str(settings.source) if args.source else None, strategy, args.force)
    stop, outcome, failure = threading.Event(), [], []

    def run() -> None:
        try:
            outcome.append(dagster_graphql_launcher(settings)(body, stop.is_set))
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    print(f"ragline: building as a run of {settings.dagster_url} ...", file=sys.stderr, flush=True)
    worker = threading.Thread(target=run, name="dagster-build", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    except KeyboardInterrupt:
        print("ragline: terminating the Dagster run ...", file=sys.stderr, flush=True)
        stop.set()
        worker.join(120)
    if failure:
        kind = "cancelled" if isinstance(failure[0], BuildCancelled) else "failed"
        print(f"ragline: build {kind}: {failure[0]}", file=sys.stderr)
        return 130 if kind == "cancelled" else 1
    result = outcome[0]
    verb = "built and activated" if result.get("built") else "already active:"
    print(f"ragline: {verb} {result.get('version')} (Dagster run {result.get('run_id')})", file=sys.stderr, flush=True)
    if args.json:
        print_json({**result, "executor": "dagster"})
    return 0


def _build_on_celery(settings: Any, args: argparse.Namespace) -> int:
    """The build's steps on the Celery workers of `--broker` (assets/celery_build.py); they read the other
    settings from their own environment."""
    from assets.build import BuildFailed
    from assets.celery_build import build_index_on_celery

    print(f"ragline: building on the Celery workers of {args.broker} ...", file=sys.stderr, flush=True)
    try:
        built = build_index_on_celery(settings, args.broker, force=args.force)
    except (BuildFailed, ValueError) as exc:
        print(f"ragline: {exc}", file=sys.stderr)
        return 1
    print(f"ragline: built {built.version} in {built.seconds:.1f} s on Celery", file=sys.stderr, flush=True)
    if args.json:
        print_json({"version": built.version, "run_ids": list(built.run_ids), "executor": "celery"})
    return 0


def cmd_index_status(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores

    stores = open_stores(settings_from(args))
    try:
        active = stores.registry.active()
    finally:
        stores.close()
    status = {"active": active.summary() if active else None}
    if args.json:
        print_json(status)
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

    stores = open_stores(settings_from(args))
    try:
        versions = [v.summary() for v in stores.registry.versions()]
    finally:
        stores.close()
    if args.json:
        print_json(versions)
    else:
        for v in versions:
            strategies = ",".join(v["strategies"])
            print(
                f"{v['content_version']}  {v['state']:<8}  {v['chunks']:>6} chunks  {strategies:<24}  {v['created_at']}"
            )
    return 0


def cmd_index_activate(args: argparse.Namespace) -> int:
    from pipelines.profiles import open_stores

    stores = open_stores(settings_from(args))
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


def register(commands: Any) -> None:
    index = commands.add_parser("index", help="build and manage index versions")
    actions = index.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="materialise the ingestion assets for a source")
    source_options(build)
    build.add_argument("--force", action="store_true", help="rebuild even when this content version is active")
    build.add_argument(
        "--strategy",
        action="append",
        help="chunk strategy to build as well as RAGLINE_CHUNK_STRATEGY (heading, heading_packed, fixed, sentence_window); repeatable",
    )
    build.add_argument("--json", action="store_true")
    build.add_argument(
        "--executor",
        choices=["in-process", "celery", "dagster"],
        default="in-process",
        help="where the build's steps run: this process; Celery workers (`celery -A dagster_celery.app worker "
        "-Q dagster`, started with the same RAGLINE_* variables); or a run of the Dagster webserver at "
        "RAGLINE_DAGSTER_URL (`ragline dagster`), executed by its run worker and shown in its UI",
    )
    build.add_argument("--broker", default="pyamqp://guest:guest@127.0.0.1:5672//", help="the Celery broker (RabbitMQ)")
    build.set_defaults(func=cmd_index_build)
    status = actions.add_parser("status", help="the active index")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_index_status)
    versions = actions.add_parser("versions", help="every index version and its state")
    versions.add_argument("--json", action="store_true")
    versions.set_defaults(func=cmd_index_versions)
    activate = actions.add_parser("activate", help="make a checked or retired version active (rollback)")
    activate.add_argument("version")
    activate.set_defaults(func=cmd_index_activate)
