"""Materialise the ingestion graph in-process (CLI, `make run`, admin API without a webserver)."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dagster import AssetSelection, DagsterInstance, materialize

from assets.ingestion import (
    INGESTION_ASSETS,
    INGESTION_CHECKS,
    active_index,
    chunks,
    clean_documents,
    embeddings,
    reference_vectors,
    sentence_vectors,
    shadow_collection,
    source_documents,
)
from assets.resources import IngestionEnv
from assets.storage import PickleFolderIOManager
from pipelines.ingestion import build
from pipelines.ingestion.build import BuildRequest
from pipelines.ports import BuildCancelled
from pipelines.profiles import Stores
from pipelines.settings import Settings


class BuildFailed(RuntimeError):
    """The build did not activate a new index; the active one (if any) is untouched."""


@dataclass
class BuildOutcome:
    version: str
    built: bool
    run_id: str | None
    seconds: float
    summary: dict[str, Any]


def dagster_instance(settings: Settings) -> DagsterInstance:
    folder = settings.dagster_dir
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    if settings.profile == "services" and settings.postgres_dsn:
        url = settings.postgres_dsn.replace("postgresql://", "postgresql+psycopg2://", 1)
        storage = f'storage:\n  postgres:\n    postgres_url: "{url}"\n'
    else:
        storage = f"storage:\n  sqlite:\n    base_dir: {folder / 'storage'}\n"
    # DefaultRunCoordinator: a run submitted to a webserver on this instance (the admin API's builds)
    # launches at once; Dagster's default queues it until a dagster-daemon dequeues it.
    coordinator = "run_coordinator:\n  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n"
    # No compute-log capture: it mirrors each step's stdout through `tail -F` subprocesses, which outlived
    # in-process builds (six left after every test run); ragline's own logs are structured already.
    compute_logs = (
        "compute_logs:\n  module: dagster._core.storage.noop_compute_log_manager\n  class: NoOpComputeLogManager\n"
    )
    text = storage + coordinator + compute_logs + "telemetry:\n  enabled: false\n"
    if not config.exists() or config.read_text() != text:
        config.write_text(text)
    return DagsterInstance.from_config(str(folder))


def planned_version(request: BuildRequest) -> str:
    """The content version a build of this request would produce, without building it."""
    return build.version_of(request, build.fetch_documents(request))


def _check_failure(evaluation: Any) -> str:
    """`<check> failed: <sub-checks> (<first examples>)`: enough to act on without opening Dagster."""
    metadata = evaluation.metadata or {}
    failed = getattr(metadata.get("failed"), "value", None)
    results = getattr(metadata.get("results"), "value", None) or {}
    details = []
    for name in str(failed or "").split(", "):
        result = results.get(name) if isinstance(results, dict) else None
        if isinstance(result, dict):
            shown = {k: v for k, v in result.items() if k != "passed"}
            details.append(f"{name} {json.dumps(shown, default=str)[:300]}")
    text = f"{evaluation.check_name} failed"
    return f"{text}: {'; '.join(details)}" if details else text


def _error_message(error: Any) -> str:
    """The step's own exception, not Dagster's "Error occurred while executing op" wrapper around it."""
    while getattr(error, "cause", None) is not None and "Error occurred while executing" in str(error.message):
        error = error.cause
    return str(error.message).strip()


def _failure(version: str, result: Any) -> str:
    failures = [_error_message(event.event_specific_data.error) for event in result.all_events if event.is_step_failure]
    checks = [
        _check_failure(e.asset_check_evaluation_data)
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.asset_check_evaluation_data.passed
    ]
    return f"index build {version} failed: {'; '.join(failures + checks) or 'see the Dagster run'}"


def build_index(
    settings: Settings,
    stores: Stores,
    request: BuildRequest,
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BuildOutcome:
    """Materialise the graph for `request`: documents, one `chunks` partition per requested strategy, then
    embeddings to activation. A run materialises one partition, so this is 2 + len(strategies) runs
    sharing values through a per-build folder; a failed run (or blocking check) stops the build.

    `cancelled()` is asked before each run and between embedding batches: True stops the build with
    `BuildCancelled`, its version marked failed and the active one untouched (a build that reached activation
    has nothing left to stop)."""
    started = time.perf_counter()
    documents = build.fetch_documents(request, settings.data_dir, build.fetch_policy(settings))
    version = build.version_of(request, documents)
    active = stores.registry.active()
    if active is not None and active.version == version and not force and stores.serves_from(active.location):
        return BuildOutcome(version, False, None, time.perf_counter() - started, active.summary())
    # A forced rebuild of the active version writes a fresh location: servers hold the current one open
    # (a Qdrant Edge shard admits one handle), and activation switches the version's row to the new one. So
    # does a version built into another vector store than the settings choose (`RAGLINE_VECTOR_STORE`).
    fresh = (
        stores.location_for(version, uuid.uuid4().hex[:12])
        if active is not None and active.version == version
        else None
    )
    if fresh is not None:  # the rebuild's checks stay off the serving row until it goes live
        stores.registry.begin_rebuild(version)

    def stop_if_cancelled(stage: str = "", done: int = 0, total: int = 0) -> None:
        if cancelled is not None and cancelled():
            raise BuildCancelled(f"index build {version} cancelled")
        if progress is not None and stage:
            progress(stage, done, total)

    def abandon() -> None:
        """The version never went live: marked failed, a forced rebuild's fresh shard dropped."""
        current = stores.registry.get(version)
        if current is not None and current.state in ("building", "checked"):
            stores.registry.update(version, state="failed")
        if fresh is not None and (current is None or current.location != fresh):
            stores.drop_index(fresh)  # the forced rebuild's shard never went live

    env = IngestionEnv(settings, request, stores, prefetched=documents, progress=stop_if_cancelled, location=fresh)
    folder = settings.dagster_dir / "io" / version
    resources = {"ragline": env, "io_manager": PickleFolderIOManager(base_dir=str(folder))}
    definitions = [*INGESTION_ASSETS, *INGESTION_CHECKS]
    tags = {"ragline/version": version, "ragline/source": request.source}
    steps: list[tuple[AssetSelection, str | None]] = [(AssetSelection.assets(source_documents, clean_documents), None)]
    steps += [(AssetSelection.assets(chunks), strategy) for strategy in request.strategies]
    rest = AssetSelection.assets(embeddings, sentence_vectors, reference_vectors, shadow_collection, active_index)
    steps.append((rest, None))
    result = None
    try:
        with dagster_instance(settings) as instance:
            for selection, partition in steps:
                try:
                    stop_if_cancelled()
                except BuildCancelled:
                    abandon()
                    raise
                result = materialize(
                    definitions,
                    selection=selection,
                    partition_key=partition,
                    instance=instance,
                    resources=resources,
                    raise_on_error=False,
                    tags=tags,
                )
                if not result.success:
                    abandon()
                    if cancelled is not None and cancelled():  # the step stopped at a cancel check
                        raise BuildCancelled(f"index build {version} cancelled")
                    raise BuildFailed(_failure(version, result))
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # intermediate values of this build only
    assert result is not None
    seconds = time.perf_counter() - started
    stores.registry.merge(version, timings={"build_seconds": round(seconds, 3)})
    summary = result.output_for_node("active_index")
    summary["timings"] = {**summary.get("timings", {}), "build_seconds": round(seconds, 3)}
    return BuildOutcome(version, True, result.run_id, seconds, summary)
