"""The `ragline` console script, run as a user runs it (a subprocess), on the embedded profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.corpus import write_corpus
from tests.formats import new_users_docs

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


def test_a_new_users_docs_in_every_format_build_with_no_include(tmp_path: Path) -> None:
    """Markdown, reStructuredText, HTML, plain text and a PDF, with no --include: each is indexed, and an answer
    found only in the PDF cites it; a folder of none of them fails with the formats read and the files seen."""
    source = new_users_docs(tmp_path / "docs")
    home = tmp_path / "home"
    built = run(home, "index", "build", "--source", str(source), "--json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["documents"] == 8  # not conf.py, logo.png or .cache/
    answer = run(home, "query", "Which port does the harbor dashboard listen on by default?", "--json")
    assert answer.returncode == 0, answer.stderr
    reply = json.loads(answer.stdout)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["citations"][0]["document_id"] == "manual.pdf"

    code = tmp_path / "code"
    code.mkdir()
    (code / "app.py").write_text("print('hi')\n")
    failed = run(home, "index", "build", "--source", str(code))
    assert failed.returncode == 1
    assert "ragline reads Markdown (.md, .markdown), reStructuredText (.rst, .rest), HTML" in failed.stderr
    assert "PDF (.pdf), and it holds 1 file(s) (1 .py): app.py" in failed.stderr
