"""DESIGN.md's import rules, read from the source: pipelines imports none of the other layers;
assets and query_graph import only pipelines; server never imports assets or evals."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("pipelines", "query_graph", "assets", "server", "evals", "ragline")
FORBIDDEN = {
    "pipelines": {"query_graph", "assets", "server", "evals", "ragline"},
    "assets": {"query_graph", "server", "evals", "ragline"},
    "query_graph": {"assets", "server", "evals", "ragline"},
    "server": {"assets", "evals", "ragline"},
    "evals": {"assets", "server", "ragline"},
}


def imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(LAYERS)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_follow_design(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ holds no code"
    violations = {
        str(f.relative_to(ROOT)): sorted(imported_layers(f) & FORBIDDEN[layer])
        for f in files
        if imported_layers(f) & FORBIDDEN[layer]
    }
    assert not violations, f"{layer} imports layers it may not: {violations}"


def test_pipelines_is_framework_free() -> None:
    frameworks = {"dagster", "hamilton", "fastapi", "starlette", "uvicorn"}
    offenders = {}
    for path in (ROOT / "pipelines").rglob("*.py"):
        tree = ast.parse(path.read_text())
        mods = {
            (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom) and (not isinstance(n, ast.ImportFrom) or n.module)
            for a in (n.names if isinstance(n, ast.Import) else [n])  # type: ignore[attr-defined]
        }
        if mods & frameworks:
            offenders[path.name] = sorted(mods & frameworks)
    assert not offenders
