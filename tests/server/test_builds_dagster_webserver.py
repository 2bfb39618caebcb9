"""Admin builds through a real `dagster-webserver` (no dagster-daemon): the instance file the project
writes lets the webserver launch the run itself, and a run left QUEUED fails the build quickly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from dagster import DagsterInstance, DagsterRunStatus
from fastapi.testclient import TestClient

from assets.build import dagster_instance
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.adapters.token_table import TokenTable
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from server.app import create_app
from server.builds import BuildRequestBody, RunNotLaunched, dagster_graphql_launcher
from tests.corpus import write_corpus
from tests.server.conftest import services_settings
from tests.server.test_admin import wait_for_build

REPO = Path(__file__).resolve().parents[2]
WEBSERVER = str(Path(sys.executable).parent / "dagster-webserver")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ragline_environment(settings: Settings) -> dict[str, str]:
    """The settings as RAGLINE_* variables: the webserver's runs read theirs from the environment."""
    env = {}
    for name in settings.model_fields_set:
        value = getattr(settings, name)
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, list | dict) else str(value)
        env[f"RAGLINE_{name.upper()}"] = text
    return env


@contextmanager
def dagster_webserver(dagster_home: Path, settings: Settings) -> Iterator[str]:
    """`dagster-webserver -w workspace.yaml` on a free loopback port, alone (no daemon), in its own
    process group so the code server and run workers it spawns are ended with it."""
    port = free_port()
    env = {**os.environ, **ragline_environment(settings), "DAGSTER_HOME": str(dagster_home)}
    env.pop("RAGLINE_DAGSTER_URL", None)
    log = (dagster_home / "webserver.log").open("w")
    process = subprocess.Popen(
        [WEBSERVER, "-h", "127.0.0.1", "-p", str(port), "-w", str(REPO / "workspace.yaml")],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError("dagster-webserver exited:\n" + (dagster_home / "webserver.log").read_text())
            try:
                if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            raise AssertionError("dagster-webserver did not answer /server_info")
        yield url
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            pass
        log.close()


@pytest.fixture
def fresh_settings(tmp_path: Path, embedded: EmbeddedServices) -> Iterator[Settings]:
    """The services profile over a registry schema of its own, with nothing built yet."""
    settings = services_settings(tmp_path, embedded)
    schema, dsn = settings.postgres_schema, settings.postgres_dsn
    assert dsn is not None
    yield settings
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_admin_build_runs_on_a_webserver_without_daemon(fresh_settings: Settings) -> None:
    """The instance file ragline writes (Postgres storage, services profile) makes the webserver launch
    the `index_build` run itself; the build activates a first version of the fixture corpus, and its
    result names the version. Unchanged content is reused, unless the request forces a rebuild."""
    settings = fresh_settings
    dagster_instance(settings).dispose()  # writes <data dir>/dagster/dagster.yaml, as a first build does
    assert "DefaultRunCoordinator" in (settings.dagster_dir / "dagster.yaml").read_text()
    assert settings.postgres_dsn is not None
    table = TokenTable(settings.postgres_dsn, settings.postgres_schema)
    operator = {"Authorization": f"Bearer {table.create('operator', ['admin'], [])[0]}"}
    table.close()
    stores = open_stores(settings)
    try:
        assert stores.registry.active() is None
        with dagster_webserver(settings.dagster_dir, settings) as url:
            app_settings = settings.model_copy(update={"dagster_url": url, "dagster_start_timeout_seconds": 60.0})
            with TestClient(create_app(app_settings, stores)) as client:
                started = client.post("/v1/admin/index/builds", json={}, headers=operator)
                assert started.status_code == 202 and started.json()["via"] == "dagster-webserver"
                build = wait_for_build(client, started.json()["id"], operator)
                assert build["state"] == "succeeded", build["error"]
                first = build["result"]
                assert first["dagster_status"] == "SUCCESS" and first["built"] is True
                active = stores.registry.active()
                assert active is not None and active.state == "active"
                assert first["version"] == active.version and first["summary"]["chunks"] == active.chunk_count
                assert client.get("/v1/index", headers=operator).json()["content_version"] == active.version

                again = client.post("/v1/admin/index/builds", json={}, headers=operator)
                reused = wait_for_build(client, again.json()["id"], operator)  # the same content: reused
                assert reused["state"] == "succeeded", reused["error"]
                assert reused["result"]["built"] is False and reused["result"]["version"] == active.version
                assert reused["result"]["build_run_id"] == ""

                # The app holds the active version's Qdrant Edge shard open (a shard admits one handle): the
                # forced run writes a fresh shard in the webserver's run worker and switches the version to it.
                forced_build = client.post("/v1/admin/index/builds", json={"force": True}, headers=operator)
                forced = wait_for_build(client, forced_build.json()["id"], operator)
                assert forced["state"] == "succeeded", forced["error"]
                forced = forced["result"]
                assert forced["built"] is True and forced["version"] == active.version
                assert forced["build_run_id"] not in ("", first["build_run_id"])
                rebuilt = stores.registry.active()
                assert rebuilt is not None and rebuilt.version == active.version
                assert rebuilt.location != active.location and forced["summary"]["location"] == rebuilt.location
                assert Path(active.location).is_dir()  # the run worker could not drop what the app holds
                # The app reopens on its next registry poll, releases the old shard and drops it.
                assert client.get("/v1/index", headers=operator).json()["location"] == rebuilt.location
                assert not Path(active.location).exists() and stores.registry.superseded() == []

                # A build cancelled over the API: the Dagster run is terminated (as the UI's Terminate does),
                # the build ends `cancelled`, and the version keeps serving from where it was.
                doomed = client.post("/v1/admin/index/builds", json={"force": True}, headers=operator).json()
                asked = client.post(f"/v1/admin/index/builds/{doomed['id']}/cancel", headers=operator)
                assert asked.status_code == 202
                stopped = wait_for_build(client, doomed["id"], operator)
                assert stopped["state"] == "cancelled", stopped
                assert "terminated" in stopped["error"]
                assert stores.registry.active().location == rebuilt.location  # type: ignore[union-attr]

                # The CLI builds the same way: a run of the webserver, executed by its run worker.
                cli = subprocess.run(
                    [sys.executable, "-m", "ragline", "index", "build", "--executor", "dagster", "--force", "--json"],
                    env={**os.environ, **ragline_environment(app_settings)}, capture_output=True, text=True,
                    timeout=600,
                )  # fmt: skip
                assert cli.returncode == 0, cli.stderr[-3000:]
                by_cli = json.loads(cli.stdout)
                assert by_cli["executor"] == "dagster" and by_cli["dagster_status"] == "SUCCESS"
                assert by_cli["built"] is True and by_cli["version"] == active.version
                assert stores.registry.active().location == by_cli["summary"]["location"]  # type: ignore[union-attr]
            with dagster_instance(settings) as instance:  # the forced run materialised the graph again
                runs = {r.run_id: r for r in instance.get_runs()}
                assert runs[forced["run_id"]].run_config["resources"]["ragline"]["config"] == {"force": True}
                assert runs[forced["build_run_id"]].tags["ragline/version"] == active.version
    finally:
        stores.close()


def test_a_run_nothing_launches_fails_the_build_quickly(tmp_path: Path) -> None:
    """Dagster's default instance (QueuedRunCoordinator) with no daemon: the run stays QUEUED, and the
    launcher gives up after its start timeout, cancels the run and names the fix."""
    settings = Settings(home=tmp_path / "home", source=write_corpus(tmp_path / "corpus"))
    home = tmp_path / "queued-instance"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {home / 'storage'}\ntelemetry:\n  enabled: false\n"
    )
    with dagster_webserver(home, settings) as url:
        launcher = dagster_graphql_launcher(
            settings.model_copy(update={"dagster_url": url}), poll_seconds=0.5, start_timeout_seconds=3.0
        )
        started = time.monotonic()
        with pytest.raises(RunNotLaunched, match=r"QUEUED after 3 s.*dagster-daemon.*DefaultRunCoordinator"):
            launcher(BuildRequestBody(), lambda: False)
        assert time.monotonic() - started < 30
        with DagsterInstance.from_config(str(home)) as instance:
            runs = instance.get_runs()
            assert len(runs) == 1 and runs[0].status == DagsterRunStatus.CANCELED
