"""Helpers for the scaffold tests: run the real command line, snapshot a project tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import cli


def command(directory: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """``playbook-operator <args>`` run in ``directory`` (in this process)."""
    with monkeypatch.context() as patch:
        patch.chdir(directory)
        return cli.main(list(args))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (relative path → content)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted({k for k in before.keys() | after.keys() if before.get(k) != after.get(k)})
