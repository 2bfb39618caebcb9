"""`ragline dagster` (what `make dagster` runs): the webserver and the daemon on the data dir's instance, on
PostgreSQL storage in the services profile. With the schedule on and a cron of every minute, the daemon fires
it, a run worker process builds the index, and the registry gets an active version, with no other process of
ragline involved."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.profiles import open_stores
from tests.server.conftest import services_settings
from tests.server.test_builds_dagster_webserver import free_port, ragline_environment

RAGLINE = str(Path(sys.executable).parent / "ragline")


def test_the_schedule_fires_under_the_daemon_and_a_run_worker_builds(
    tmp_path: Path, embedded: EmbeddedServices
) -> None:
    settings = services_settings(tmp_path, embedded).model_copy(
        update={"build_schedule_enabled": True, "build_schedule_cron": "* * * * *"}
    )
    port = free_port()
    env = {
        **os.environ,
        **ragline_environment(settings),
        "RAGLINE_BUILD_SCHEDULE_ENABLED": "true",
        "RAGLINE_BUILD_SCHEDULE_CRON": "* * * * *",
    }
    log = (tmp_path / "dagster.log").open("w")
    process = subprocess.Popen(
        [RAGLINE, "dagster", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    stores = open_stores(settings)
    try:
        deadline = time.monotonic() + 240  # start-up, the next minute's tick, the build
        ui = False
        while time.monotonic() < deadline and stores.registry.active() is None:
            assert process.poll() is None, (tmp_path / "dagster.log").read_text()[-3000:]
            with contextlib.suppress(httpx.TransportError):
                ui = ui or httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200
            time.sleep(2)
        active = stores.registry.active()
        assert active is not None, (tmp_path / "dagster.log").read_text()[-3000:]
        assert ui, "the webserver never answered"
        instance = DagsterInstance.from_config(str(settings.dagster_dir))
        try:
            runs = instance.get_runs(
                RunsFilter(job_name="index_build", tags={"dagster/schedule_name": "index_build_schedule"})
            )
            statuses = [r.status for r in runs]
            # The activation comes before the run ends: the run has succeeded or is finishing.
            assert any(st in (DagsterRunStatus.SUCCESS, DagsterRunStatus.STARTED) for st in statuses), statuses
        finally:
            instance.dispose()
    finally:
        stores.close()
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
        with psycopg.connect(str(settings.postgres_dsn), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {settings.postgres_schema} CASCADE")
