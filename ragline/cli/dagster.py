"""`ragline dagster`: Dagster as it is deployed, on this data dir's instance: the webserver (the UI, and the
runs the admin API submits) and the daemon (the schedule, the source-change sensor, run monitoring), two
processes started together and stopped together on Ctrl-C. Each run is executed by a run worker process of
its own (Dagster's default run launcher). `make dagster` runs it."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ragline.cli.common import settings_from

REPO = Path(__file__).resolve().parents[2]


def cmd_dagster(args: argparse.Namespace) -> int:
    from assets.build import dagster_instance

    settings = settings_from(args)
    dagster_instance(settings).dispose()  # writes <data dir>/dagster/dagster.yaml for this profile
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "DAGSTER_HOME": str(settings.dagster_dir)}
    workspace = str(REPO / "workspace.yaml")
    commands = {
        "webserver": [str(bin_dir / "dagster-webserver"), "-h", args.host, "-p", str(args.port), "-w", workspace],
        "daemon": [str(bin_dir / "dagster-daemon"), "run", "-w", workspace],
    }
    processes = {
        name: subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True) for name, command in commands.items()
    }
    print(
        f"ragline: Dagster on http://{args.host}:{args.port} (instance {settings.dagster_dir}); "
        "the daemon runs the schedule and the sensor. Ctrl-C stops both.",
        file=sys.stderr,
        flush=True,
    )
    code = 0
    try:
        while True:
            exited = {name: p.poll() for name, p in processes.items() if p.poll() is not None}
            if exited:
                print(f"ragline dagster: {exited} exited; stopping the other", file=sys.stderr)
                code = 1
                break
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for process in processes.values():  # each in its own group: its code server and run workers end with it
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    return code


def register(commands: Any) -> None:
    dagster = commands.add_parser("dagster", help="the Dagster webserver and daemon on this data dir's instance")
    dagster.add_argument("--host", default="127.0.0.1")
    dagster.add_argument("--port", type=int, default=3000)
    dagster.set_defaults(func=cmd_dagster)
