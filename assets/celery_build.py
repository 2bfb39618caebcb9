"""A build on the Celery executor: the same three stages as `assets/build.py` `build_index` (documents, one
`chunks` partition per strategy, embeddings to activation), each a Dagster run whose steps are Celery tasks that
whichever worker is free executes (`celery -A dagster_celery.app worker -Q dagster`), RabbitMQ the broker. The
workers read the settings from their environment and hand values between steps through the shared I/O folder
of the code location (`<data dir>/dagster/io/ui`), so every worker must see the same data dir and `RAGLINE_*`
variables as the process that starts the build. The runs are recorded in the data dir's Dagster instance."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from dagster import DagsterInstance, JobDefinition, execute_job, reconstructable

from assets.build import BuildFailed, dagster_instance
from assets.definitions import chunks_on_celery, documents_on_celery, embed_and_activate_on_celery
from pipelines.ingestion import build
from pipelines.ingestion.build import BuildRequest
from pipelines.settings import Settings

DEFAULT_BROKER = "pyamqp://guest:guest@127.0.0.1:5672//"


@dataclass(frozen=True)
class CeleryBuild:
    version: str
    run_ids: tuple[str, ...]
    seconds: float


def build_index_on_celery(
    settings: Settings, broker: str = DEFAULT_BROKER, force: bool = False, timeout_seconds: float = 3600.0
) -> CeleryBuild:
    """Run the build's stages on the Celery workers of `broker`; a failed stage (or blocking check) stops it."""
    started = time.perf_counter()
    request = BuildRequest.from_settings(settings)
    version = build.version_of(request, build.fetch_documents(request, settings.data_dir, build.fetch_policy(settings)))
    config = {
        "execution": {"config": {"broker": broker, "backend": "rpc://"}},
        "resources": {"ragline": {"config": {"source": request.source, "force": force}}},
    }
    stages: list[tuple[Callable[[], JobDefinition], str | None]] = [(documents_on_celery, None)]
    stages += [(chunks_on_celery, strategy) for strategy in request.strategies]
    stages.append((embed_and_activate_on_celery, None))
    run_ids = []
    with dagster_instance(settings) as instance:
        for stage, partition in stages:
            tags = {"ragline/version": version, "ragline/source": request.source, "ragline/executor": "celery"}
            if partition is not None:
                tags["dagster/partition"] = partition
            with execute_job(
                reconstructable(stage), instance=instance, run_config=config, tags=tags, raise_on_error=False
            ) as result:
                run_ids.append(result.run_id)
                if not result.success:
                    raise BuildFailed(f"index build {version} failed in run {result.run_id} ({stage.__name__})")
            if time.perf_counter() - started > timeout_seconds:
                raise BuildFailed(f"index build {version} ran past {timeout_seconds:.0f} s")
    return CeleryBuild(version, tuple(run_ids), time.perf_counter() - started)


def step_pids(instance: DagsterInstance, run_ids: tuple[str, ...]) -> dict[str, int]:
    """Which process started each step of these runs: `<run>:<step>` -> pid."""
    pids = {}
    for run_id in run_ids:
        for record in instance.all_logs(run_id):
            event = record.dagster_event
            if event is not None and event.event_type_value == "STEP_START" and event.pid is not None:
                pids[f"{run_id[:8]}:{event.step_key}"] = event.pid
    return pids
