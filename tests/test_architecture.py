"""The architecture visible as folders, checked over the whole of runner/.

``lint-imports`` holds each layer to its place; these tests hold what its contracts do not
say: no class grows past 250 lines (a class that big does more than one job), no module
past 500, no function past 80 (today's longer ones are listed and may only shrink),
runner/'s root keeps only the entry points, runner's sub-packages import one another
without a cycle, and every runner name has one import path: no module-level alias of
another runner module's name, no re-export through ``__all__`` and no module that only
re-exports (the few kept are listed, with why).

They also hold the docs to the code: docs/architecture.md's package tree lists exactly
runner/'s packages, docs/modules.md exactly its modules, and docs/architecture.md's list
of import contracts is pyproject.toml's, by name.
"""

from __future__ import annotations

import ast
import pathlib
import re
import tomllib
from collections.abc import Iterator

import grimp
import pytest

import runner

PACKAGE = pathlib.Path(runner.__file__).parent
ROOT = PACKAGE.parent
DOCS = ROOT / "docs"
#: Folders under runner/ that hold no module of the runtime: the Ansible content runs
#: load (listed in the tree as one folder) and the files ``init`` renders.
NOT_CODE = ("runner/collection", "runner/tools/scaffold/templates")
MAX_CLASS_LINES = 250
MAX_MODULE_LINES = 500
ENTRY_POINTS = frozenset({"__init__.py", "__main__.py", "cli.py", "py.typed"})
MAX_FUNCTION_LINES = 80
#: Functions over MAX_FUNCTION_LINES today, with their length (``def`` through the last
#: line, docstring included). The list may only shrink: a listed function may not grow, and
#: one back under the budget (or gone) must leave the list.
LONG_FUNCTIONS = {
    "runner/status/conditions.py:write": 102,
    "runner/tools/scaffold/api.py:plan": 113,
}
#: Module-level aliases of another runner module's name (``Name = module.Attr``) kept, and
#: why. Each is a second import path; it goes when its last importer names the defining
#: module instead.
ALLOWED_ALIASES: dict[str, str] = {}
#: Modules that only re-export (imports and ``__all__``), kept, and why: packages whose
#: docstring names these as their way in.
ALLOWED_REEXPORTS = {
    "runner/proxy/__init__.py": "the proxy's public names (OwnerProxy and the protocols "
    "its callers implement), named in its docstring; the runtime imports them from here",
    "runner/warm/__init__.py": "Launchers and the launch modes, the package's way in "
    "(its docstring); warm execution imports nothing else of the runtime",
    "runner/operations/sharding/__init__.py": "Shards, the gate the docstring names, and "
    "the membership API the manager and election use",
    "runner/operations/metrics/__init__.py": "Metrics only, while runner/operations/"
    "controllers.py (being edited) names metrics.Metrics",
}


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


def _module_name(path: pathlib.Path) -> str:
    """``runner.a.b`` for runner/a/b.py, ``runner.a.__init__`` for a package's module."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _functions(
    node: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method below ``node``, nested ones too, by qualified name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{child.name}", child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def long_functions(source: str, *, where: str) -> dict[str, int]:
    """``where:qualname`` of each function in ``source`` over MAX_FUNCTION_LINES, and its
    length from ``def`` through its last line (decorators not counted)."""
    found = {}
    for name, node in _functions(ast.parse(source)):
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > MAX_FUNCTION_LINES:
            found[f"{where}:{name}"] = lines
    return found


def _runner_imports(tree: ast.Module, module: str) -> dict[str, str]:
    """Names bound at module level by imports from runner, and what they name."""
    package = module.split(".") if module.endswith("__init__") else module.split(".")[:-1]
    bound = {}
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + [base] * bool(base))
            if base == "runner" or base.startswith("runner."):
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "runner" or alias.name.startswith("runner."):
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else "runner"
    return bound


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level statements, those under a top-level ``if`` or ``try`` included."""
    for node in tree.body:
        yield node
        if isinstance(node, ast.If | ast.Try):
            for block in ("body", "orelse", "handlers", "finalbody"):
                for inner in getattr(node, block, ()):
                    yield from inner.body if isinstance(inner, ast.ExceptHandler) else [inner]


def aliases(source: str, *, module: str) -> dict[str, str]:
    """Second import paths ``source`` (the module ``module``) makes for runner names: each
    module-level ``Name = module.Attr`` or ``Name = Attr`` whose root was imported from
    runner, and each name in ``__all__`` that was imported from runner; by name, what it
    stands for."""
    tree = ast.parse(source)
    imported = _runner_imports(tree, module)
    found = {}
    for node in _top_level(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if target.id == "__all__" and isinstance(value, ast.List | ast.Tuple):
            for item in value.elts:
                if isinstance(item, ast.Constant) and item.value in imported:
                    found[item.value] = f"{imported[item.value]} (in __all__)"
            continue
        root = value
        while isinstance(root, ast.Attribute):
            root = root.value
        plain = isinstance(value, ast.Name | ast.Attribute)
        if plain and isinstance(root, ast.Name) and root.id in imported:
            found[target.id] = ast.unparse(value)
    return found


def reexports_only(source: str) -> bool:
    """Whether ``source`` holds nothing but imports and ``__all__`` (a docstring aside)."""
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    imports = [
        node
        for node in body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    rest = [
        node
        for node in body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in _targets(node))
        )
    ]
    return bool(imports) and not rest


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def test_every_function_is_under_80_lines_or_listed_and_not_growing() -> None:
    found: dict[str, int] = {}
    for path in _sources():
        where = str(path.relative_to(ROOT))
        found.update(long_functions(path.read_text(encoding="utf-8"), where=where))
    new = {name: lines for name, lines in found.items() if name not in LONG_FUNCTIONS}
    grown = {
        name: (LONG_FUNCTIONS[name], lines)
        for name, lines in found.items()
        if name in LONG_FUNCTIONS and lines > LONG_FUNCTIONS[name]
    }
    stale = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not new, (
        f"expected every function in runner/ at most {MAX_FUNCTION_LINES} lines, saw "
        f"{len(new)} over it: {new} (split it along its steps)"
    )
    assert not grown, f"expected listed long functions not to grow, saw (listed, now): {grown}"
    assert not stale, (
        f"expected LONG_FUNCTIONS to list only functions over {MAX_FUNCTION_LINES} lines, "
        f"saw these under it or gone (remove them from the list): {stale}"
    )


#: Module names several packages share on purpose: each holds that package's part of one
#: thing (its Prometheus families, its error types, its console command).
ROLE_NAMES = frozenset({"families.py", "errors.py", "command.py"})
#: Other module names two packages share today, and how many. These may only shrink: a new
#: module takes a name of its own (a name that says which package's it is needs no alias).
SHARED_NAMES = {
    "templates.py": 2,
    "server.py": 2,
    "runtime.py": 2,
    "project.py": 2,
    "names.py": 2,
    "documents.py": 2,
}


def _code_modules() -> list[pathlib.Path]:
    return [
        path
        for path in _sources()
        if path.name != "__init__.py"
        and not any(str(path.relative_to(ROOT)).startswith(skip + "/") for skip in NOT_CODE)
    ]


def test_module_names_do_not_collide_beyond_the_known_ones() -> None:
    seen: dict[str, list[str]] = {}
    for path in _code_modules():
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {name: where for name, where in seen.items() if len(where) > 1}
    new = {
        name: where
        for name, where in shared.items()
        if name not in ROLE_NAMES and len(where) > SHARED_NAMES.get(name, 1)
    }
    assert not new, (
        f"expected module names of their own, saw names shared across packages: {new} "
        "(name the module after what it holds in its package)"
    )
    gone = sorted(name for name, count in SHARED_NAMES.items() if len(shared.get(name, ())) < count)
    assert not gone, f"{gone} shared less than SHARED_NAMES says: lower or drop them there"


def test_protocol_names_are_unique() -> None:
    found: dict[str, list[str]] = {}
    for path in _code_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                (isinstance(base, ast.Name) and base.id == "Protocol")
                or (isinstance(base, ast.Attribute) and base.attr == "Protocol")
                for base in node.bases
            ):
                found.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    twice = {name: where for name, where in found.items() if len(where) > 1}
    assert not twice, f"expected one Protocol per name, saw {twice}"


def test_one_import_path_per_name_no_alias() -> None:
    found = {}
    for path in _sources():
        where = str(path.relative_to(ROOT))
        source = path.read_text(encoding="utf-8")
        if where in ALLOWED_REEXPORTS:
            continue  # a kept package API re-exports through __all__ on purpose
        for name, target in aliases(source, module=_module_name(path)).items():
            found[f"{where}:{name}"] = target
    unexpected = {name: target for name, target in found.items() if name not in ALLOWED_ALIASES}
    stale = sorted(set(ALLOWED_ALIASES) - set(found))
    assert not unexpected, (
        f"expected runner names to be imported from the module that defines them, saw "
        f"{len(unexpected)} second import path(s): {unexpected}"
    )
    assert not stale, f"expected ALLOWED_ALIASES to hold only live aliases, saw gone: {stale}"


def test_one_import_path_per_name_no_reexport_module() -> None:
    found = {
        str(path.relative_to(ROOT))
        for path in _sources()
        if reexports_only(path.read_text(encoding="utf-8"))
    }
    unexpected = sorted(found - set(ALLOWED_REEXPORTS))
    stale = sorted(set(ALLOWED_REEXPORTS) - found)
    assert not unexpected, (
        f"expected no runner module that only re-exports other modules' names, saw {unexpected}"
    )
    assert not stale, f"expected ALLOWED_REEXPORTS to hold only such modules, saw: {stale}"


PLANTED_ALIAS = """
from runner.base.http import connections
from runner.base.http.http1 import Request
from runner.kube import transport as kube_transport
import runner.config.entry

Limits = connections.Limits
Incoming = Request
Query: object = kube_transport.Query
Watch = runner.config.entry.Watch
Plain = connections.Limits()  # a call builds a value: not an alias
Local = dict  # not from runner
__all__ = ["Request", "Plain"]
"""


@pytest.mark.parametrize(
    ("name", "stands_for"),
    [
        pytest.param("Limits", "connections.Limits", id="module-attribute"),
        pytest.param("Incoming", "Request", id="imported-name"),
        pytest.param("Query", "kube_transport.Query", id="annotated"),
        pytest.param("Watch", "runner.config.entry.Watch", id="dotted-import"),
        pytest.param("Request", "runner.base.http.http1.Request (in __all__)", id="all-reexport"),
    ],
)
def test_the_alias_check_sees_a_planted_alias(name: str, stands_for: str) -> None:
    found = aliases(PLANTED_ALIAS, module="runner.planted")
    assert found.get(name) == stands_for, f"expected {name} -> {stands_for}, saw {found}"


def test_the_alias_check_passes_values_and_foreign_names() -> None:
    found = aliases(PLANTED_ALIAS, module="runner.planted")
    assert "Plain" not in found and "Local" not in found, f"expected no value alias: {found}"


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("runner.base.http.listener", id="module"),
        pytest.param("runner.base.__init__", id="package"),
    ],
)
def test_the_alias_check_resolves_relative_imports(module: str) -> None:
    source = "from . import http1\nfrom .http1 import text\nRequest = http1.Request\nt = text\n"
    found = aliases(source, module=module)
    expected = {"Request": "http1.Request", "t": "text"}
    assert found == expected, f"expected {expected}, saw {found}"


@pytest.mark.parametrize(
    ("source", "only"),
    [
        pytest.param('"""Doc."""\nfrom runner.a import b\n__all__ = ["b"]\n', True, id="re-export"),
        pytest.param('"""Doc."""\n', False, id="docstring-only"),
        pytest.param("from runner.a import b\n\ndef f() -> None: ...\n", False, id="code"),
    ],
)
def test_the_reexport_check(source: str, only: bool) -> None:
    assert reexports_only(source) is only, f"expected re-export-only={only} for {source!r}"


def test_the_function_check_counts_def_through_last_line() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = (
        f"class C:\n    @staticmethod\n    def long() -> None:\n{body.replace('    ', '        ')}"
    )
    assert long_functions(source, where="m.py") == {"m.py:C.long": MAX_FUNCTION_LINES + 1}


# -- the docs against the code ------------------------------------------------------------


def doc_section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown page, up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"expected a '## {heading}' section, saw none"
    return match.group(1)


def _code_lines(text: str) -> Iterator[str]:
    """The lines inside the fenced code blocks of ``text``."""
    inside = False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside:
            yield line


_FOLDER = re.compile(r"^(runner(?:/\w+)*)/(?:\s|$)")
_MODULE = re.compile(r"^  (\w+\.py)(?:\s|$)")


def doc_packages(text: str) -> set[str]:
    """The folders a page's package tree lists (``runner/a/b/`` lines), as ``runner/a/b``."""
    return {m.group(1) for line in _code_lines(text) if (m := _FOLDER.match(line))}


def doc_modules(text: str) -> set[str]:
    """The modules a page's module tree lists: each ``  name.py`` line under the latest
    ``runner/a/`` line, as ``runner/a/name.py``."""
    found, folder = set(), None
    for line in _code_lines(text):
        if head := _FOLDER.match(line):
            folder = head.group(1)
        elif (module := _MODULE.match(line)) and folder is not None:
            found.add(f"{folder}/{module.group(1)}")
    return found


def doc_contracts(text: str) -> list[str]:
    """The contract names a page lists: the ``- `` lines of its Import contracts section."""
    section = doc_section(text, "Import contracts")
    return [line[2:].strip() for line in section.splitlines() if line.startswith("- ")]


def _code(path: pathlib.Path) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    inside = tuple(f"{folder}/" for folder in NOT_CODE)
    return "__pycache__" not in path.parts and not relative.startswith(inside)


def code_packages() -> set[str]:
    """runner/ and every folder below it that holds a module, and the Ansible content."""
    folders = {path.parent for path in PACKAGE.rglob("*.py") if _code(path)}
    return {folder.relative_to(ROOT).as_posix() for folder in folders} | {NOT_CODE[0]}


def code_modules() -> set[str]:
    """Every module of runner/ but the packages' ``__init__.py``."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _code(path) and path.name != "__init__.py"
    }


def listing_problems(*, listed: set[str], actual: set[str], page: str) -> list[str]:
    """What a page's listing gets wrong: entries that are not in the code, and the code's
    entries it leaves out."""
    return [f"{page} lists {entry}, which does not exist" for entry in sorted(listed - actual)] + [
        f"{page} does not list {entry}" for entry in sorted(actual - listed)
    ]


def test_the_architecture_page_lists_every_package() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    listed = doc_packages(doc_section(text, "Packages"))
    problems = listing_problems(listed=listed, actual=code_packages(), page="architecture.md")
    assert not problems, f"expected the package tree to match runner/, saw: {problems}"


def test_the_modules_page_lists_every_module() -> None:
    listed = doc_modules((DOCS / "modules.md").read_text(encoding="utf-8"))
    problems = listing_problems(listed=listed, actual=code_modules(), page="modules.md")
    assert not problems, (
        f"expected docs/modules.md to list runner/'s modules, one line each, saw: {problems}"
    )


def test_the_architecture_page_lists_the_import_contracts() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = [c["name"] for c in config["tool"]["importlinter"]["contracts"]]
    listed = doc_contracts((DOCS / "architecture.md").read_text(encoding="utf-8"))
    problems = listing_problems(listed=set(listed), actual=set(names), page="architecture.md")
    repeated = sorted({name for name in listed if listed.count(name) > 1})
    assert not problems and not repeated, (
        f"expected the contract list to be pyproject.toml's, by name, saw: {problems}"
        f"{f'; listed twice: {repeated}' if repeated else ''}"
    )


STALE_PAGE = """# Architecture

## Packages

```
runner/                       entry points only
runner/queue/                 where work waits
runner/nosuch/                a package that was renamed away
runner/collection/            Ansible content (not Python the runtime imports)
  ansible_collections/        continuation lines and content folders are not packages
```

## Import contracts

- Runtime layers only import downward
- A contract that was renamed

## Where to look

- runner/watch/ is not in a code block, so not in the tree
"""


def test_a_stale_package_tree_is_caught() -> None:
    listed = doc_packages(doc_section(STALE_PAGE, "Packages"))
    assert listed == {"runner", "runner/queue", "runner/nosuch", "runner/collection"}, listed
    actual = {"runner", "runner/queue", "runner/watch", "runner/collection"}
    problems = listing_problems(listed=listed, actual=actual, page="p.md")
    expected = ["p.md lists runner/nosuch, which does not exist", "p.md does not list runner/watch"]
    assert problems == expected, f"expected {expected}, saw {problems}"


def test_a_stale_tree_of_the_real_code_is_caught() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    planted = text.replace("runner/queue/ ", "runner/nosuch/", 1)
    found = {}
    for name, page in (("as is", text), ("planted", planted)):
        listed = doc_packages(doc_section(page, "Packages"))
        found[name] = listing_problems(listed=listed, actual=code_packages(), page="a.md")
    added = sorted(set(found["planted"]) - set(found["as is"]))
    expected = ["a.md does not list runner/queue", "a.md lists runner/nosuch, which does not exist"]
    assert added == expected, f"expected the planted name to add {expected}, saw {added}"


def test_a_stale_module_tree_is_caught() -> None:
    page = "```\nrunner/queue/    q\n  workqueue.py   w\n  gone.py   g\n  templates/   t\n```\n"
    listed = doc_modules(page)
    assert listed == {"runner/queue/workqueue.py", "runner/queue/gone.py"}, listed
    actual = {"runner/queue/workqueue.py", "runner/queue/backoff.py"}
    problems = listing_problems(listed=listed, actual=actual, page="m.md")
    expected = ["m.md lists runner/queue/gone.py, which does not exist"]
    expected.append("m.md does not list runner/queue/backoff.py")
    assert problems == expected, f"expected {expected}, saw {problems}"


def test_a_stale_contract_list_is_caught() -> None:
    assert doc_contracts(STALE_PAGE) == [
        "Runtime layers only import downward",
        "A contract that was renamed",
    ]
