"""The Python example of docs/api.md, run as a user would run it, against a live server."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from pipelines.settings import PROJECT_ROOT
from tests.server.conftest import ServerEnv, live_server


def documented_example() -> str:
    text = (PROJECT_ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## Calling the API from Python", 1)[1]
    found = re.search(r"```python\n(.*?)\n```", section, re.S)
    assert found, "docs/api.md lost its Python example"
    return found.group(1)


def test_the_python_example_in_the_api_docs_runs_against_a_live_server(server_env: ServerEnv) -> None:
    with live_server(server_env.settings, server_env.stores) as url:
        env = {**os.environ, "RAGLINE_URL": url, "RAGLINE_TOKEN": server_env.query_token}
        run = subprocess.run(
            [sys.executable, "-c", documented_example()], env=env, capture_output=True, text=True, timeout=120
        )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    # The JSON reply's status and answer, then its citations; the stream's sentences, then the final status.
    status = lines[0].split(" ", 1)[0]
    assert status in {"answered", "no_answer"} and lines[-1] == status
    if status == "answered":
        assert any(line.count(" ") == 1 and "#" in line.split(" ")[1] for line in lines[1:]), run.stdout
        assert any("[C:" in line for line in lines[1:-1])
