"""The shortcuts a warm run installs return exactly what ansible-core's originals return."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.warm import shortcut

ROOT = Path(__file__).resolve().parents[2]
stack = pytest.importorskip(
    "ansible.module_utils._internal._stack", reason="ansible-core before 2.19 has no stack walk"
)


def _described(frames: list[inspect.FrameInfo]) -> list[tuple[Any, ...]]:
    return [
        (f.filename, f.lineno, f.function, f.code_context, f.index, f.positions) for f in frames
    ]


def _walk(walk: Callable[[], Iterator[inspect.FrameInfo]]) -> list[inspect.FrameInfo]:
    _skip_stackwalk = True  # a frame the walk must leave out
    return _inner(walk)


def _inner(walk: Callable[[], Iterator[inspect.FrameInfo]]) -> list[inspect.FrameInfo]:
    return list(walk())


def test_the_lazy_stack_walk_yields_the_frames_of_the_original() -> None:
    # Both walks run from the same lines, so every frame they see is described alike.
    original, lazy = (_walk(walk) for walk in (stack.iter_stack, shortcut.lazy_iter_stack))
    functions = [f.function for f in lazy]
    assert "_walk" not in functions and functions[0] == "_inner", (
        f"expected _walk (it has _skip_stackwalk) left out and _inner first, got {functions[:3]}"
    )
    assert _described(lazy) == _described(original), (
        f"expected the original's frames {_described(original)[:3]}..., "
        f"got {_described(lazy)[:3]}..."
    )
    assert stack.caller_frame() is not None


def test_a_place_described_again_is_described_alike_and_apart() -> None:
    """Each place is described once per run; later walks get equal, separate descriptions."""
    first, again, original = (
        _walk(walk)
        for walk in (shortcut.lazy_iter_stack, shortcut.lazy_iter_stack, stack.iter_stack)
    )
    assert _described(again) == _described(first) == _described(original), (
        f"expected every walk from one place described alike, got {_described(again)[:2]} "
        f"after {_described(first)[:2]}"
    )
    assert first[0].code_context is not None
    first[0].code_context.append("changed by a caller")
    # _inner, the first frame, is the same place for every walk.
    assert _described(_walk(shortcut.lazy_iter_stack))[0] == _described(original)[0], (
        "a caller's change to one description reached a later walk's"
    )


#: Run as a launcher runs it: the program launcher's imports, then ``prepare`` (the first
#: lookup of the process, as in a launcher: in a test session something may have looked
#: before, and ``inspect`` only scans ``sys.modules`` when the asked-for file is unknown).
_LAUNCHER = """
import inspect, sys
from runner.warm import shortcut, zygote
zygote.preload("program")
shortcut.prepare()
known = set(inspect.modulesbyfile.values())
print(sorted(
    module.__name__
    for module in list(sys.modules.values())
    if inspect.ismodule(module)
    and getattr(module, "__file__", None)
    and module.__name__ not in known
))
"""


def test_the_launcher_maps_the_files_of_the_modules_it_imported() -> None:
    """After ``prepare`` (in the launcher), describing a frame of any module imported
    before it does not search ``sys.modules`` again."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, f"expected the launcher's imports to work:\n{done.stderr[-2000:]}"
    missing = done.stdout.strip().splitlines()[-1]
    assert missing == "[]", f"expected every imported module mapped, these are not: {missing}"
