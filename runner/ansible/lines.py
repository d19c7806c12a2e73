"""The ansible-core lines the runner supports, their Pythons and end-of-life dates.

This table is the one place that says which lines are supported. The rest follows from
it and is checked against it (``tests/ansible/test_lines.py``): ``pyproject.toml``'s
``ansible-core`` bounds, one ``hack/constraints/ansible-<line>.txt`` per line, ``make
venv``'s choice (``hack/venv.py`` reads this file without importing the package: it
uses the standard library only) and the image's ``ANSIBLE_CORE`` default.

Dates are the ends of life of ansible-core's release and maintenance schedule (each
line is maintained for about 18 months); Pythons are the controller Pythons each line
supports. At start the runner logs the versions it runs on (:func:`installed`) and
warns when its line is past its end of life (:func:`end_of_life_warning`).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Line:
    """One ansible-core line: ``2.21`` covers every 2.21.x release."""

    core: str
    #: The ``ansible`` community package built against it (bundles kubernetes.core).
    bundle: str
    #: The oldest and the newest controller Python, as (major, minor).
    python_min: tuple[int, int]
    python_max: tuple[int, int]
    end_of_life: datetime.date

    def runs_on(self, python: tuple[int, int]) -> bool:
        return self.python_min <= python <= self.python_max


#: Oldest first. A new line is added here, in pyproject.toml's bounds and as a constraints file.
LINES: tuple[Line, ...] = (
    Line("2.19", "12", (3, 11), (3, 13), datetime.date(2026, 11, 30)),
    Line("2.20", "13", (3, 12), (3, 14), datetime.date(2027, 5, 31)),
    Line("2.21", "14", (3, 12), (3, 14), datetime.date(2027, 11, 30)),
)

SUPPORTED: tuple[str, ...] = tuple(line.core for line in LINES)


def line_of(version: str) -> str:
    """``2.21.5`` → ``2.21``; a version without a minor part comes back unchanged."""
    return ".".join(version.split(".")[:2])


def find(core: str) -> Line | None:
    """The supported line of an ansible-core version (``2.21.5`` or ``2.21``), if any."""
    wanted = line_of(core)
    return next((line for line in LINES if line.core == wanted), None)


def newest_for(python: tuple[int, int], *, today: datetime.date) -> Line | None:
    """The newest line that runs on ``python`` and is not past its end of life; else the
    newest that runs on it at all (end-of-life, the caller says so); else ``None``."""
    fitting = [line for line in LINES if line.runs_on(python)]
    current = [line for line in fitting if line.end_of_life >= today]
    chosen = current or fitting
    return chosen[-1] if chosen else None


def end_of_life_warning(core: str, *, today: datetime.date) -> str | None:
    """One line telling that ``core`` is past its end of life (or not supported), or ``None``."""
    line = find(core)
    if line is None:
        return (
            f"ansible-core {core} is not a supported line (supported: {', '.join(SUPPORTED)}); "
            "install one of those"
        )
    if line.end_of_life >= today:
        return None
    newer = [other for other in LINES if other.end_of_life >= today]
    advice = (
        f"use ansible-core {newer[-1].core} (Python "
        f"{newer[-1].python_min[0]}.{newer[-1].python_min[1]} or newer)"
        if newer
        else "no supported line is maintained any more: update Playbook Operator"
    )
    return (
        f"ansible-core {line.core} reached its end of life on {line.end_of_life.isoformat()}: "
        f"{advice}"
    )


@dataclass(frozen=True)
class Installed:
    """What this process runs roles with."""

    python: str
    ansible_core: str
    ansible_runner: str
    kubernetes_core: str

    def fields(self) -> dict[str, str]:
        return {
            "python": self.python,
            "ansible-core": self.ansible_core,
            "ansible-runner": self.ansible_runner,
            "kubernetes.core": self.kubernetes_core,
        }

    def describe(self) -> str:
        return ", ".join(f'{name}: "{value}"' for name, value in self.fields().items())


def installed(collections_path: Sequence[str] = ()) -> Installed:
    """The versions in this environment, read from package metadata (nothing is imported).

    kubernetes.core is looked for as Ansible looks for it: on ``collections_path``
    (default: Ansible's), then in the ``ansible`` package's bundled collections.
    """
    return Installed(
        python=".".join(str(part) for part in sys.version_info[:3]),
        ansible_core=_distribution("ansible-core"),
        ansible_runner=_distribution("ansible-runner"),
        kubernetes_core=_collection("kubernetes", "core", _collection_roots(collections_path)),
    )


def _distribution(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _collection_roots(collections_path: Sequence[str]) -> list[Path]:
    # Late: hack/venv.py loads this file alone, with the standard library only.
    from runner.config import lookup  # noqa: PLC0415

    configured = collections_path or lookup.DEFAULT_COLLECTIONS_PATH
    roots = [Path(entry).expanduser() / "ansible_collections" for entry in configured]
    roots += [Path(entry) / "ansible_collections" for entry in sys.path if entry]
    return roots


def _collection(namespace: str, name: str, roots: Iterable[Path]) -> str:
    for root in roots:
        manifest = root / namespace / name / "MANIFEST.json"
        try:
            info = json.loads(manifest.read_text(encoding="utf-8"))["collection_info"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return str(info.get("version", "unknown"))
    return "not installed"
