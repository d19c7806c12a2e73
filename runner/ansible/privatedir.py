"""The CR's private data dir: what a run may find there, and what it leaves.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status), used
by :mod:`runner.ansible.launch` only. ansible-runner reads its inputs from the
private data dir (``args``, ``env/*``, ``project/ansible.cfg``, ``inventory/``),
so before each run everything but the runtime's own directories is removed and
the runtime writes its inputs afresh, never through a symbolic link
(:func:`clear_inputs`, :func:`write_private`). Artifacts outlive the run, so
they keep no credentials: the ``command`` artifact keeps the environment's
names only (:func:`withhold_environment`), the ``stdout`` artifact is cut of the
Secret values the run showed (:class:`Stdout`), and old runs are rotated.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from runner.ansible import events
from runner.ansible.events import Logger

#: Each CR's Ansible local temp dir, in its private data dir (ANSIBLE_LOCAL_TEMP).
LOCAL_TEMP = "tmp"
#: What a private data dir keeps between runs; all else is removed before each run.
KEPT = frozenset({"artifacts", LOCAL_TEMP})
#: In the ``command`` artifact, in place of each environment variable's value.
WITHHELD = "<withheld>"
#: A new file: never an existing one, never through a link.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Stdout:
    """The ``stdout`` artifact, minus the Secret values the run showed: lines outside
    events (Ansible's verbose output) reach it unredacted otherwise."""

    def __init__(self, path: Path, tally: events.Tally) -> None:
        path.unlink(missing_ok=True)
        fd = os.open(path, _NEW_FILE, 0o600)
        self._handle = os.fdopen(fd, "w", encoding="utf-8", errors="replace")
        self._tally = tally

    def write(self, text: str) -> None:
        self._handle.write(self._tally.scrub(text))

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def withhold_environment(path: Path) -> None:
    """Rewrite ansible-runner's ``command`` artifact with the environment's names only:
    the operator's environment may hold credentials, and artifacts outlive the run."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    env = recorded.get("env") if isinstance(recorded, dict) else None
    if isinstance(env, dict):
        recorded["env"] = dict.fromkeys(sorted(env), WITHHELD)
    staging = path.with_name(f".{path.name}.tmp")
    write_private(staging, json.dumps(recorded, ensure_ascii=False))
    os.replace(staging, path)


def rotate(artifacts: Path, *, keep: int, log: Logger) -> list[Path]:
    """Keep the newest ``keep`` artifact dirs (0: all), as ``--rotate-artifacts`` does;
    the dirs removed."""
    if keep <= 0:
        return []
    runs = [p for p in artifacts.iterdir() if p.is_dir() and not p.is_symlink()]
    runs.sort(key=lambda p: p.stat().st_mtime)
    removed = runs[: max(0, len(runs) - keep)]
    for old in removed:
        shutil.rmtree(old, ignore_errors=True)
        log.debug("artifacts rotated", extra={"removed": old.name})
    return removed


def link_latest(artifact_dir: Path) -> None:
    """``artifacts/latest`` → this run, replaced atomically."""
    link = artifact_dir.parent / "latest"
    tmp = artifact_dir.parent / f".latest-{artifact_dir.name}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(artifact_dir.name)
    os.replace(tmp, link)


def clear_inputs(pdd: Path) -> None:
    """Leave in ``pdd`` only what the runtime keeps between runs (the artifacts, the
    local temp dir, both real directories): anything else would be read by
    ansible-runner as an input (``args``, ``env/*``, ``project/ansible.cfg``,
    ``inventory/*``), and the runtime writes its own inputs afresh for each run."""
    for entry in os.scandir(pdd):
        if entry.name in KEPT and entry.is_dir(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)  # never follows a link inside
        else:
            os.unlink(entry.path)


def write_private(path: Path, text: str) -> None:
    """Write a new file only this uid reads; whatever was at ``path`` (a planted link
    too) is replaced, never written through."""
    path.unlink(missing_ok=True)
    fd = os.open(path, _NEW_FILE, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
