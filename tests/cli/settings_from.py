"""Settings built from command lines, as ``playbook-operator run`` builds them (shared by
the flag tests of every feature)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner import cli


def one_watch(directory: Path) -> Path:
    """A watches.yaml in ``directory`` with one valid entry (kind K of g.io, an empty role)."""
    role = directory / "roles" / "k"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text("[]\n")
    path = directory / "watches.yaml"
    path.write_text(f"- {{version: v1, group: g.io, kind: K, role: {role}}}\n")
    return path


def build(watches_file: Path, *flags: str, environ: dict[str, str] | None = None) -> Any:
    """The settings of ``run --watches-file=<watches_file> <flags>`` in ``environ``."""
    args = cli.parse(["run", f"--watches-file={watches_file}", *flags])
    return cli.build_settings(args, environ=environ or {})
