"""The `ragline` console script, run as a user runs it (a subprocess), on the embedded profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.corpus import write_corpus

RAGLINE = str(Path(sys.executable).parent / "ragline")


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGLINE_HOME": str(home), "RAGLINE_LOG_JSON": "true"}
    env.pop("RAGLINE_TOKEN", None)
    return subprocess.run([RAGLINE, *args], capture_output=True, text=True, env=env, timeout=600)


def test_build_status_query_and_rollback(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "docs")
    home = tmp_path / "home"
    built = run(home, "index", "build", "--source", str(source), "--include", "guide/**", "--json")
    assert built.returncode == 0, built.stderr
    first = json.loads(built.stdout)
    assert first["built"] and first["documents"] == 2  # only guide/**: document ids relative to the source

    status = json.loads(run(home, "index", "status", "--json").stdout)
    assert status["active"]["content_version"] == first["version"]

    answer = run(home, "query", "Which port does the harbor dashboard listen on?", "--json")
    assert answer.returncode == 0, answer.stderr
    reply = json.loads(answer.stdout)
    assert reply["status"] == "answered" and reply["citations"][0]["document_id"] == "guide/config.md"
    assert {"retrieved", "timings_ms", "index", "cache"} <= set(reply)

    second = json.loads(run(home, "index", "build", "--source", str(source), "--json").stdout)
    assert second["built"] and second["documents"] == 4
    assert run(home, "index", "activate", first["version"]).returncode == 0
    versions = {v["content_version"]: v["state"] for v in json.loads(run(home, "index", "versions", "--json").stdout)}
    assert versions == {first["version"]: "active", second["version"]: "retired"}


def test_query_without_an_index_fails_clearly(tmp_path: Path) -> None:
    result = run(tmp_path / "empty-home", "query", "anything", "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "no_active_index"


def test_build_of_a_missing_source_fails_clearly(tmp_path: Path) -> None:
    result = run(tmp_path / "home", "index", "build", "--source", str(tmp_path / "nope"))
    assert result.returncode != 0
    assert "does not exist" in result.stderr
