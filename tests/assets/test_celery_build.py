"""A build on the Celery executor (`ragline index build --executor celery`) with two real workers on the machine's RabbitMQ: its steps run in both worker
processes, never in the process that starts it, and it produces the same content version and the same chunks
as an in-process build of the same source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from dagster import DagsterInstance

from assets.build import build_index
from assets.celery_build import step_pids
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from tests.server.conftest import services_settings
from tests.server.test_builds_dagster_webserver import ragline_environment

REPO = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).parent / "celery")


@contextmanager
def celery_workers(settings: Settings, count: int, logs: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` Celery workers of dagster_celery's app on the `dagster` queue, one task at a time each."""
    env = {**os.environ, **ragline_environment(settings), "DAGSTER_CELERY_BROKER_HOST": "127.0.0.1"}
    workers = []
    for n in range(count):
        log = (logs / f"worker{n}.log").open("w")
        workers.append(
            subprocess.Popen(
                [CELERY, "-A", "dagster_celery.app", "worker", "--pool", "solo", "--prefetch-multiplier=1",
                 "-Q", "dagster", "-n", f"ragline{n}-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "INFO"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        )  # fmt: skip
    try:
        yield workers
    finally:
        for worker in workers:
            try:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(timeout=30)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)


def test_two_celery_workers_build_the_index_an_in_process_build_builds(
    tmp_path: Path, embedded: EmbeddedServices
) -> None:
    alone = services_settings(tmp_path / "alone", embedded)
    # The embedding fans out into up to four steps (as many as there are new texts), which the two workers share.
    spread = services_settings(tmp_path / "spread", embedded).model_copy(
        update={"source": alone.source, "embedding_fanout": 4}
    )
    schemas = [alone.postgres_schema, spread.postgres_schema]
    try:
        stores = open_stores(alone)
        try:
            expected = build_index(alone, stores, BuildRequest.from_settings(alone))
            index = stores.open_index(stores.registry.active().location)  # type: ignore[union-attr]
            chunks = {(c.chunk_id, c.text) for c in index.scroll_chunks()}
            index.close()
        finally:
            stores.close()

        with celery_workers(spread, 2, tmp_path) as workers:
            time.sleep(3)  # the workers connect to RabbitMQ
            assert all(w.poll() is None for w in workers), (tmp_path / "worker0.log").read_text()[-2000:]
            done = subprocess.run(
                [str(Path(sys.executable).parent / "ragline"), "index", "build", "--executor", "celery", "--json"],
                env={**os.environ, **ragline_environment(spread)},
                capture_output=True,
                text=True,
                timeout=600,
            )
        assert done.returncode == 0, done.stderr[-3000:]
        built = json.loads(done.stdout)
        assert built["version"] == expected.version and built["executor"] == "celery"
        stores = open_stores(spread)
        try:
            active = stores.registry.active()
            assert active is not None and active.version == expected.version
            index = stores.open_index(active.location)
            assert {(c.chunk_id, c.text) for c in index.scroll_chunks()} == chunks
            index.close()
        finally:
            stores.close()
        instance = DagsterInstance.from_config(str(spread.dagster_dir))
        try:
            pids = step_pids(instance, tuple(built["run_ids"]))
        finally:
            instance.dispose()
        assert len(pids) >= 6 and os.getpid() not in pids.values()
        assert set(pids.values()) <= {w.pid for w in workers} and len(set(pids.values())) == 2, pids
        batches = {step: pid for step, pid in pids.items() if "embed_batch[" in step}
        assert len(batches) >= 2 and len(set(batches.values())) == 2, batches  # embedded on both workers
    finally:
        with psycopg.connect(str(alone.postgres_dsn), autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
