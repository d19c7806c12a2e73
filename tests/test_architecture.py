"""The architecture visible as folders, checked over the whole of runner/.

``lint-imports`` holds each layer to its place; these tests hold what its contracts do not
say: no class grows past 250 lines (a class that big does more than one job), no module
past 500, runner/'s root keeps only the entry points, and runner's sub-packages import one
another without a cycle.
"""

from __future__ import annotations

import ast
import pathlib

import grimp

import runner

PACKAGE = pathlib.Path(runner.__file__).parent
ROOT = PACKAGE.parent
MAX_CLASS_LINES = 250
MAX_MODULE_LINES = 500
ENTRY_POINTS = frozenset({"__init__.py", "__main__.py", "cli.py", "py.typed"})


def _sources() -> list[pathlib.Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def test_every_class_is_under_250_lines() -> None:
    offenders = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines >= MAX_CLASS_LINES:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert not offenders, (
        f"expected every class in runner/ under {MAX_CLASS_LINES} lines, saw "
        f"{len(offenders)} at or over it: {'; '.join(offenders)}"
    )


def test_every_module_is_under_500_lines() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in _sources()}
    offenders = [
        f"{path.relative_to(ROOT)}: {lines}"
        for path, lines in sorted(sizes.items(), key=lambda item: -item[1])
        if lines >= MAX_MODULE_LINES
    ]
    assert not offenders, (
        f"expected every module in runner/ under {MAX_MODULE_LINES} lines, saw "
        f"{len(offenders)} at or over it: {'; '.join(offenders)}"
    )


def test_the_root_holds_only_the_entry_points() -> None:
    files = {path.name for path in PACKAGE.iterdir() if path.is_file()}
    assert files <= ENTRY_POINTS, (
        f"expected runner/'s root to hold only {sorted(ENTRY_POINTS)} besides its folders, "
        f"saw also {sorted(files - ENTRY_POINTS)}"
    )


def _unit(module: str) -> str:
    """The sub-package a module belongs to in the package-level graph: ``runner.<pkg>``,
    but sharding stands apart from the operations that use it, and each tool apart from
    the others (they are separate commands)."""
    parts = module.split(".")
    deeper = parts[:3] == ["runner", "operations", "sharding"] or parts[:2] == ["runner", "tools"]
    return ".".join(parts[: 3 if deeper else 2])


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the path that closes it, or None."""
    state: dict[str, str] = {}  # absent: unseen; "open": on the current path; "done"
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_sub_packages() -> None:
    graph = grimp.build_graph("runner", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            source, target = _unit(module), _unit(imported)
            if source != target:
                edges.setdefault(source, set()).add(target)
    cycle = _cycle(edges)
    assert cycle is None, (
        f"expected runner's sub-packages to import one another without a cycle, saw "
        f"{' -> '.join(cycle or ())}"
    )
