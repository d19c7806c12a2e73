#!/usr/bin/env python3
"""Make a virtualenv with the project on the newest ansible-core line this host's Pythons allow.

    hack/venv.py ensure VENV [--line LINE] [--python X.Y]   # make or refresh VENV
    hack/venv.py line VENV                                  # the line VENV was made for
    hack/venv.py pick [--line LINE] [--python X.Y]          # what ensure would use

``make venv`` calls ``ensure .venv``. The Python is ``$PYTHON`` if set; else the newest
of ``python3.14``, ``python3.13``, ``python3.12`` on PATH that runs (a pyenv shim of a
version that is not selected does not); else the newest pyenv-installed 3.12 or later;
else ``python3``. The line is the newest supported one that runs on that Python and is
not past its end of life (``runner/ansible/lines.py``, read without importing the
package); only a Python 3.11 falls back to 2.19, with one line saying it is end-of-life
and how to get a newer Python. ``--line`` and ``--python`` pin either (the lanes of
``make test-lanes``: ``--python oldest``, 2.20 on Python 3.12, 2.19 on 3.11).

VENV/.installed records the Python, the line and a digest of pyproject.toml and the
line's constraints file: when any differs, VENV is removed and made again. Runs on
the host's ``python3`` (3.8 or newer), standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINES_FILE = ROOT / "runner" / "ansible" / "lines.py"
CONSTRAINTS = ROOT / "hack" / "constraints"
STAMP = ".installed"
# A venv's own interpreter is never a candidate (make puts .venv/bin first on PATH).
PROBE = (
    "import sys, venv, ensurepip; "
    "print('%d.%d.%d' % sys.version_info[:3], int(sys.prefix != sys.base_prefix))"
)


def _lines():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("_playbook_operator_lines", LINES_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _probe(exe: str) -> tuple[str, tuple[int, int], str] | None:
    """(path, (major, minor), full version) of a Python that runs and has venv, or None."""
    path = shutil.which(exe) if os.sep not in exe else exe
    if not path:
        return None
    try:
        done = subprocess.run(
            [path, "-c", PROBE], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    answer = done.stdout.split()
    if done.returncode != 0 or len(answer) != 2 or answer[1] != "0":
        return None
    version = answer[0]
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        return None
    major, minor, _ = (int(part) for part in version.split("."))
    return os.path.realpath(path), (major, minor), version


def _pyenv_pythons() -> list[str]:
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        root = done.stdout.strip() or root
    found = []
    for entry in sorted((Path(root) / "versions").glob("3.*")):
        match = re.fullmatch(r"3\.(\d+)\.(\d+)", entry.name)
        if match and (entry / "bin" / "python3").exists():
            found.append(((int(match[1]), int(match[2])), str(entry / "bin" / "python3")))
    return [path for _, path in sorted(found, reverse=True)]


def _candidates(minor: str | None) -> list[str]:
    if minor:
        return [f"python{minor}", *_pyenv_pythons()]
    names = ["python3.14", "python3.13", "python3.12", *_pyenv_pythons(), "python3"]
    return names


def pick(*, line: str | None, python: str | None) -> dict[str, str]:
    lines = _lines()
    today = datetime.date.today()
    if python == "oldest":  # the oldest Python the line supports (the lanes)
        if not line or lines.find(line) is None:
            sys.exit(f"hack/venv.py: --python oldest needs a supported --line, not {line}")
        python = "{}.{}".format(*lines.find(line).python_min)
    chosen = None
    if os.environ.get("PYTHON") and not python:
        chosen = _probe(os.environ["PYTHON"])
        if chosen is None:
            sys.exit(
                f"hack/venv.py: PYTHON={os.environ['PYTHON']} does not run, has no venv module, "
                "or is a virtualenv's own interpreter: name the Python it was made from"
            )
    else:
        for name in _candidates(python):
            probed = _probe(name)
            if probed is None or probed[1] < (3, 11):
                continue
            if python and "{}.{}".format(*probed[1]) != python:
                continue
            if line and not lines.find(line).runs_on(probed[1]):
                continue
            chosen = probed
            break
    if chosen is None:
        wanted = f"Python {python}" if python else "a Python 3.11 or newer"
        sys.exit(f"hack/venv.py: found no {wanted}" + (f" for ansible-core {line}" if line else ""))
    path, version, full = chosen
    target = lines.find(line) if line else lines.newest_for(version, today=today)
    if target is None or not target.runs_on(version):
        sys.exit(
            f"hack/venv.py: no supported ansible-core line runs on Python {full} ({path}); "
            f"supported: {', '.join(lines.SUPPORTED)}"
        )
    chosen_line = {"python": path, "version": full, "line": target.core}
    warning = lines.end_of_life_warning(target.core, today=today)
    if warning:
        chosen_line["warning"] = (
            f"{warning}. Install Python 3.12 or newer (e.g. `pyenv install 3.13`) and run "
            "`make venv` again, or set PYTHON=/path/to/python3.13."
        )
    return chosen_line


def _digest(line: str) -> str:
    """What the install depends on: pyproject.toml's [project] table (not the tools'
    settings below it) and the line's constraints file."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = re.search(r"^\[project\]$.*?(?=^\[(?!project[.\]]))", pyproject, re.M | re.S)
    total = hashlib.sha256((project[0] if project else pyproject).encode())
    total.update((CONSTRAINTS / f"ansible-{line}.txt").read_bytes())
    return total.hexdigest()[:16]


def ensure(venv: Path, *, line: str | None, python: str | None) -> None:
    """Make VENV unless its stamp says it is what ``pick`` chooses; one at a time per VENV."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(venv.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"playbook-operator-venv-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _ensure(venv, line=line, python=python)


def _ensure(venv: Path, *, line: str | None, python: str | None) -> None:
    wanted = pick(line=line, python=python)
    warning = wanted.pop("warning", None)
    wanted["digest"] = _digest(wanted["line"])
    stamp = venv / STAMP
    try:
        if json.loads(stamp.read_text(encoding="utf-8")) == wanted:
            return
    except (OSError, ValueError):
        pass
    if warning and not line:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"venv: {venv} on Python {wanted['version']} ({wanted['python']}), "
        f"ansible-core {wanted['line']}",
        file=sys.stderr,
    )
    shutil.rmtree(venv, ignore_errors=True)
    bin_dir = venv / "bin"
    subprocess.run([wanted["python"], "-m", "venv", str(venv)], check=True)
    pip = [str(bin_dir / "python"), "-m", "pip", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    constraints = CONSTRAINTS / f"ansible-{wanted['line']}.txt"
    subprocess.run([*pip, "install", "-c", str(constraints), "-e", f"{ROOT}[dev]"], check=True)
    stamp.write_text(json.dumps(wanted) + "\n", encoding="utf-8")


def main() -> None:
    top = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    for name in ("ensure", "pick"):
        command = commands.add_parser(name)
        if name == "ensure":
            command.add_argument("venv", type=Path)
        command.add_argument("--line", default=None, help="ansible-core line, e.g. 2.20")
        command.add_argument(
            "--python", default=None, help="Python X.Y (e.g. 3.12), or oldest: the line's oldest"
        )
    commands.add_parser("line").add_argument("venv", type=Path)
    args = top.parse_args()
    line = args.line if args.command != "line" and args.line else None
    python = getattr(args, "python", None) or None
    if args.command == "ensure":
        ensure(args.venv, line=line, python=python)
    elif args.command == "pick":
        print(json.dumps(pick(line=line, python=python)))
    else:
        print(json.loads((args.venv / STAMP).read_text(encoding="utf-8"))["line"])


if __name__ == "__main__":
    main()
