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


# Inside pipelines/: each top-level module or package on a floor; a floor imports only floors below it
# (or modules of its own floor), so the graph between them has no cycle and no import points upwards.
PIPELINES_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"settings", "logs", "golden_sets", "text", "deadline", "access"}),
    frozenset({"documents"}),
    frozenset({"ports"}),
    frozenset({"adapters"}),
    frozenset({"profiles"}),
    frozenset({"caching"}),
    frozenset({"ingestion"}),
    frozenset({"guardrails"}),
    frozenset({"retrieval"}),
    frozenset({"answering"}),
)
MAX_PIPELINES_ENTRIES = 15


def _pipelines_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in (ROOT / "pipelines").rglob("*.py"):
        rel = path.relative_to(ROOT / "pipelines")
        top = rel.parts[0].removesuffix(".py")
        if top == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pipelines."):
                target = node.module.split(".")[1]
                if target != top:
                    edges.setdefault(top, set()).add(target)
    return edges


def test_pipelines_top_level_is_small_and_every_entry_has_a_floor() -> None:
    entries = {p.name.removesuffix(".py") for p in (ROOT / "pipelines").iterdir() if p.name != "__pycache__"}
    entries.discard("__init__")
    assert len(entries) <= MAX_PIPELINES_ENTRIES, sorted(entries)
    floored = set().union(*PIPELINES_FLOORS)
    assert entries == floored, f"unplaced: {sorted(entries - floored)}; gone: {sorted(floored - entries)}"


def test_pipelines_imports_point_only_downwards() -> None:
    floor = {name: i for i, names in enumerate(PIPELINES_FLOORS) for name in names}
    upward = {
        f"{source} -> {target}"
        for source, targets in _pipelines_edges().items()
        for target in targets
        if floor[target] > floor[source]
    }
    assert not upward, f"imports from a lower floor of pipelines/ upwards: {sorted(upward)}"


def test_pipelines_import_graph_has_no_cycle() -> None:
    edges = _pipelines_edges()
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in visiting, f"import cycle in pipelines/: {' -> '.join((*trail, name))}"
        if name in done:
            return
        visiting.add(name)
        for target in sorted(edges.get(name, ())):
            visit(target, (*trail, name))
        visiting.discard(name)
        done.add(name)

    for name in sorted(edges):
        visit(name, ())


# Hamilton's public surface: the driver, the decorators, lifecycle hooks and its type helpers. Anything
# else (hamilton.execution, hamilton.graph, hamilton.node internals) can change in any release.
PUBLIC_HAMILTON = {
    "hamilton",
    "hamilton.driver",
    "hamilton.function_modifiers",
    "hamilton.lifecycle",
    "hamilton.htypes",
}


def test_no_module_reaches_into_hamilton_internals() -> None:
    offenders: dict[str, list[str]] = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                    if node.module == "hamilton":
                        names += [f"hamilton.{a.name}" for a in node.names]
                private = [n for n in names if n.split(".")[0] == "hamilton" and n not in PUBLIC_HAMILTON]
                if private:
                    offenders.setdefault(str(path.relative_to(ROOT)), []).extend(private)
    assert not offenders, f"private Hamilton modules imported: {offenders}"
