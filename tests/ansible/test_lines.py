"""The supported ansible-core lines are declared once (runner/ansible/lines.py) and everything
that names a line agrees with it: pyproject.toml's bounds, the constraints files, the image's
default, ``make venv``'s choice (hack/venv.py) and what ``playbook-operator version`` prints."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner import cli
from runner.ansible import lines

ROOT = Path(__file__).resolve().parents[2]
VENV_SCRIPT = ROOT / "hack" / "venv.py"
TODAY = datetime.date(2026, 12, 4)


def _next_minor(core: str) -> str:
    major, minor = core.split(".")
    return f"{major}.{int(minor) + 1}"


def test_lines_are_oldest_first_with_one_constraints_file_each() -> None:
    cores = [tuple(int(part) for part in line.core.split(".")) for line in lines.LINES]
    assert cores == sorted(cores), f"lines.LINES must be oldest first, saw {lines.SUPPORTED}"
    files = {p.name for p in (ROOT / "hack" / "constraints").glob("ansible-*.txt")}
    expected = {f"ansible-{core}.txt" for core in lines.SUPPORTED}
    assert files == expected, f"constraints files {sorted(files)}, lines say {sorted(expected)}"
    for line in lines.LINES:
        text = (ROOT / "hack" / "constraints" / f"ansible-{line.core}.txt").read_text()
        pin = f"ansible-core>={line.core},<{_next_minor(line.core)}"
        assert pin in text, f"ansible-{line.core}.txt should pin {pin!r}"
        assert re.search(rf"^ansible>={line.bundle}[.,]", text, re.M), (
            f"ansible-{line.core}.txt should pin the ansible {line.bundle}.x bundle"
        )


def test_pyproject_and_image_bounds_follow_the_table() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    oldest, newest = lines.LINES[0], lines.LINES[-1]
    bound = f'"ansible-core>={oldest.core},<{_next_minor(newest.core)}"'
    assert bound in pyproject, f"pyproject.toml should declare {bound}"
    dockerfile = (ROOT / "Dockerfile").read_text()
    default = re.search(r"^ARG ANSIBLE_CORE=(\S+)$", dockerfile, re.M)
    assert default and default[1] == newest.core, (
        f"the image's default line should be the newest, {newest.core}; saw "
        f"{default[1] if default else 'no ARG ANSIBLE_CORE'}"
    )


@pytest.mark.parametrize(
    ("python", "expected"),
    [((3, 11), "2.19"), ((3, 12), "2.21"), ((3, 13), "2.21"), ((3, 14), "2.21"), ((3, 15), None)],
)
def test_the_newest_line_a_python_runs(python: tuple[int, int], expected: str | None) -> None:
    found = lines.newest_for(python, today=TODAY)
    assert (found.core if found else None) == expected


def test_an_end_of_life_line_is_said_with_the_way_out() -> None:
    warning = lines.end_of_life_warning("2.19.14", today=TODAY)
    assert warning is not None and "end of life on 2026-11-30" in warning, warning
    assert "ansible-core 2.21" in warning and "Python 3.12" in warning, warning
    assert lines.end_of_life_warning("2.21.5", today=TODAY) is None
    assert lines.end_of_life_warning("2.21.5", today=datetime.date(2028, 1, 1)) is not None
    unsupported = lines.end_of_life_warning("2.18.3", today=TODAY)
    assert unsupported is not None and "not a supported line" in unsupported, unsupported


def test_version_prints_what_runs_roles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["version"]) == 0
    out = capsys.readouterr().out
    python = ".".join(str(part) for part in sys.version_info[:3])
    core = importlib.metadata.version("ansible-core")
    for expected in (f'python: "{python}"', f'ansible-core: "{core}"', "ansible-runner: "):
        assert expected in out, f"expected {expected!r} in {out!r}"
    collection = re.search(r'kubernetes.core: "([^"]+)"', out)
    assert collection and re.fullmatch(r"\d+\.\d+\.\d+", collection[1]), (
        f"expected kubernetes.core's version in {out!r}"
    )


def _pick(*args: str, env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, str(VENV_SCRIPT), "pick", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"hack/venv.py pick {args} failed: {done.stderr}"
    picked: dict[str, str] = json.loads(done.stdout)
    return picked


def test_venv_takes_this_python_s_newest_line() -> None:
    env = {**os.environ, "PYTHON": os.path.realpath(sys.executable)}  # not the venv's own
    picked = _pick(env=env)
    expected = lines.newest_for(sys.version_info[:2], today=datetime.date.today())
    assert expected is not None
    assert picked["line"] == expected.core, f"PYTHON={sys.executable}: {picked}"
    assert ("warning" in picked) == (expected.end_of_life < datetime.date.today()), picked


def test_venv_skips_a_python_that_does_not_run_and_venv_interpreters(tmp_path: Path) -> None:
    """A pyenv shim of an unselected version is on PATH but fails, and make puts .venv/bin
    first on PATH: neither is taken, the next Python is."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "python3.14"
    broken.write_text("#!/bin/sh\necho 'pyenv: python3.14: command not found' >&2\nexit 127\n")
    broken.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    venv_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv_dir)], check=True)
    env = {
        "PATH": f"{bin_dir}:{venv_dir / 'bin'}",
        "PYENV_ROOT": str(tmp_path / "no-pyenv"),
        "HOME": str(tmp_path),
    }
    picked = _pick(env=env)
    assert picked["python"] == os.path.realpath(sys.executable), picked
    assert not picked["python"].startswith(str(venv_dir)), picked
    expected = lines.newest_for(sys.version_info[:2], today=datetime.date.today())
    assert expected is not None and picked["line"] == expected.core, picked


def test_a_lane_takes_its_line_s_oldest_python() -> None:
    line = lines.LINES[-1]
    oldest = "{}.{}".format(*line.python_min)
    done = subprocess.run(
        [sys.executable, str(VENV_SCRIPT), "pick", "--line", line.core, "--python", "oldest"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"no Python {oldest} here: {done.stderr.strip()}")
    picked = json.loads(done.stdout)
    assert picked["version"].startswith(oldest + "."), picked
    assert picked["line"] == line.core, picked


def test_a_run_logs_its_versions_first_and_warns_past_end_of_life(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.operations import manager  # noqa: PLC0415

    with caplog.at_level(logging.INFO, logger="runner"):
        manager.log_versions(())
    first = caplog.records[0]
    assert first.getMessage() == "Version", [r.getMessage() for r in caplog.records]
    assert getattr(first, "ansible-core") == importlib.metadata.version("ansible-core")
    assert getattr(first, "kubernetes.core") not in ("", None)

    caplog.clear()
    old = lines.Installed("3.11.7", "2.19.14", "2.4.3", "6.2.0")
    monkeypatch.setattr(lines, "installed", lambda _path=(): old)
    with caplog.at_level(logging.INFO, logger="runner"):
        manager.log_versions(())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "2.19 reached its end of life" in warnings[0], warnings
