"""The built wheel, installed without extras into a fresh virtualenv (torch first, as the Makefile does),
answers a question offline from a folder of its own: every runtime dependency is declared, every file the
package reads at run time is inside it, and nothing is read from this checkout.

It takes a few minutes (the install), so it runs once, in CI's `make test` like every other test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.corpus import write_corpus

PROJECT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command[:4])} ... failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.timeout(2400)
def test_the_wheel_alone_installs_and_answers_offline(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(PROJECT)],
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("ragline-*.whl")

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=True)
    python = fresh / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", TORCH], cwd=tmp_path)
    # The lock pins what the resolver picks; no extra is named, so `dev` (pytest, ruff, ...) stays out.
    run(
        [str(python), "-m", "pip", "install", "--quiet", "-c", str(PROJECT / "requirements.lock"), str(wheel)],
        cwd=tmp_path,
    )
    installed = run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path).lower()
    assert "pytest==" not in installed and "ruff==" not in installed
    run([str(python), "-m", "pip", "check"], cwd=tmp_path)

    elsewhere = tmp_path / "elsewhere"  # not the checkout: imports and files come from the wheel
    docs = write_corpus(elsewhere / "docs")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAGLINE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        RAGLINE_HOME=str(elsewhere / "home"),
        RAGLINE_SOURCE=str(docs),
        PATH=f"{fresh / 'bin'}:{env.get('PATH', '')}",
    )
    where = run(
        [str(python), "-c", "import server, pipelines; print(server.__file__, pipelines.__file__)"],
        cwd=elsewhere,
        env=env,
    )
    assert str(PROJECT) not in where and str(fresh) in where, where
    ragline = str(fresh / "bin" / "ragline")
    run([ragline, "index", "build"], cwd=elsewhere, env=env)
    answer = run([ragline, "query", "How long does harbor keep build logs?"], cwd=elsewhere, env=env)
    assert "14 days" in answer, answer
