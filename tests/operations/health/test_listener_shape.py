"""Shape: the listener's Server accepts and dispatches; connections and HTTP/1.1 stand apart."""

from __future__ import annotations

import ast
import pathlib

import pytest

import runner

ROOT = pathlib.Path(runner.__file__).parent.parent


@pytest.mark.parametrize(
    "path, name", [pytest.param("runner/base/listener.py", "Server", id="Server")]
)
def test_class_is_under_250_lines(path: str, name: str) -> None:
    tree = ast.parse((ROOT / path).read_text())
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, f"expected one class {name} in {path}, saw {len(found)}"
    lines = (found[0].end_lineno or 0) - found[0].lineno + 1
    assert lines < 250, f"expected {name} in {path} under 250 lines, saw {lines}"
