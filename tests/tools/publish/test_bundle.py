"""``make manifests bundle scorecard catalog`` as an author runs it, offline once the Go
tools are built: in a copy of this repository (the Memcached operator) and in a project
fresh from ``init`` + ``create api``. Each must validate its bundle (with the
operatorframework suite), pass the six scorecard tests and write a catalog opm accepts.

The Go tools are built into this repository's bin/ on first use (runner/tools/publish/
gotools.py; minutes, cold) and reused after; where they cannot be built (no Go, no module
proxy and nothing cached) the tests skip and say why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.tools.publish import gotools
from runner.tools.publish.errors import ToolError
from tests.tools.scaffold.support import command

REPO = Path(__file__).resolve().parents[3]
BIN = REPO / "bin"
COPIED = ("Makefile", "PROJECT", "watches.yaml", "roles", "config")
TARGETS = ("manifests", "bundle", "scorecard", "catalog")


@pytest.fixture(scope="module")
def tools() -> Path:
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    try:
        for name in gotools.TOOLS:
            gotools.ensure(name, bin_dir=BIN, out=lambda _: None)
    except ToolError as exc:
        pytest.skip(f"the Go tools cannot be built here: {exc}")
    return BIN


def make(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", *args, *TARGETS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"expected make {' '.join(TARGETS)} to succeed:\n{output[-4000:]}"
    return output


def check_published(root: Path, output: str) -> None:
    passed = output.count("\tState: pass")
    assert passed == 6 and "\tState: fail" not in output, (
        f"expected six scorecard tests passed, saw {passed}:\n{output[-3000:]}"
    )
    assert output.count("All validation tests have completed successfully") == 2, output[-3000:]
    (index,) = list((root / "catalog").glob("*/index.yaml"))
    assert "schema: olm.channel" in index.read_text(), "the catalog has no channel"
    assert (root / "catalog.Dockerfile").is_file()


@pytest.mark.timeout(1800)
def test_the_memcached_operator_publishes(tools: Path, tmp_path: Path) -> None:
    root = tmp_path / "memcached-operator"
    root.mkdir()
    for part in COPIED:
        source = REPO / part
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, root / part)
    # The test runs in the venv `make venv` would make: -o venv leaves it as it is.
    output = make(root, "-o", "venv", f"VENV={sys.prefix}", f"LOCALBIN={tools}")
    check_published(root, output)


@pytest.mark.timeout(1800)
def test_a_new_project_publishes(
    tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "greeter-operator"
    root.mkdir()
    for argv in (
        ("init", "--domain", "example.com"),
        ("create", "api", "--group", "demo", "--version", "v1alpha1", "--kind", "Greeter"),
    ):
        assert command(root, *argv, monkeypatch=monkeypatch) == 0, f"{argv} failed"
    output = make(root, f"LOCALBIN={tools}")
    check_published(root, output)
