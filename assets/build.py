"""Materialise the ingestion graph in-process (CLI, `make run`, admin API without a webserver)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from dagster import DagsterInstance, materialize

from assets.ingestion import INGESTION_ASSETS, INGESTION_CHECKS
from assets.resources import IngestionEnv
from pipelines import indexing
from pipelines.indexing import BuildRequest
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
    text = storage + "telemetry:\n  enabled: false\n"
    if not config.exists() or config.read_text() != text:
        config.write_text(text)
    return DagsterInstance.from_config(str(folder))


def planned_version(request: BuildRequest) -> str:
    """The content version a build of this request would produce, without building it."""
    return indexing.version_of(request, indexing.fetch_documents(request))


def build_index(settings: Settings, stores: Stores, request: BuildRequest, force: bool = False) -> BuildOutcome:
    started = time.perf_counter()
    documents = indexing.fetch_documents(request)
    version = indexing.version_of(request, documents)
    active = stores.registry.active()
    if active is not None and active.version == version and not force:
        return BuildOutcome(version, False, None, time.perf_counter() - started, active.summary())
    env = IngestionEnv(settings, request, stores)
    with dagster_instance(settings) as instance:
        result = materialize(
            [*INGESTION_ASSETS, *INGESTION_CHECKS],
            instance=instance,
            resources={"ragline": env},
            raise_on_error=False,
            tags={"ragline/version": version, "ragline/source": request.source},
        )
    if not result.success:
        current = stores.registry.get(version)
        if current is not None and current.state in ("building", "checked"):
            stores.registry.update(version, state="failed")
        failures = [
            str(event.event_specific_data.error.message).strip()  # type: ignore[union-attr]
            for event in result.all_events
            if event.is_step_failure
        ]
        checks = [
            f"{e.asset_check_evaluation_data.check_name} failed"  # type: ignore[union-attr]
            for e in result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.asset_check_evaluation_data.passed  # type: ignore[union-attr]
        ]
        raise BuildFailed(f"index build {version} failed: {'; '.join(failures + checks) or 'see the Dagster run'}")
    summary = result.output_for_node("active_index")
    return BuildOutcome(version, True, result.run_id, time.perf_counter() - started, summary)
