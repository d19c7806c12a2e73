"""A cap on the bytes of artifacts kept under the runner dir, across every CR.

ansible-operator keeps ``maxRunnerArtifacts`` (20) artifact dirs per CR and nothing bounds
their sum: at about 0.8 MiB on disk a run, 2,000 CRs keep about 30 GiB. A pod's runner dir
is usually an ``emptyDir``; what it takes counts toward the pod's ephemeral storage, for
which the kubelet evicts pods. :class:`ArtifactBudget` holds the size on disk of every
run's artifact dir, oldest first, and after each run removes the oldest ones (of any CR)
until the total is under ``--max-runner-artifacts-size``. A dir that ``artifacts/latest``
names is never removed: each CR keeps at least its last run, which ``playbook-operator runs``
and operator authors read.

The index is built once at start-up (one walk of the runner dir) and kept in memory; each
run adds one entry, so the cost per run does not grow with the number of CRs.
"""

from __future__ import annotations

import collections
import os
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from logging import Logger
from pathlib import Path

ARTIFACTS = "artifacts"  # ansible-runner's per-private-data-dir artifacts folder
LATEST = "latest"  # the link to a CR's last run (privatedir.link_latest)


@dataclass(frozen=True)
class _Run:
    path: Path
    size: int


def dir_size(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (allocated blocks, as ``du`` and the
    kubelet's ephemeral-storage accounting count them; links are not followed). A run's
    artifacts are some 130 small files: on 4 KiB blocks they take about twice their
    length (0.78 MiB for a Memcached run of 0.38 MiB)."""
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue  # removed meanwhile
    return total


def _is_latest(path: Path) -> bool:
    try:
        return os.readlink(path.parent / LATEST) == path.name
    except OSError:
        return False


class ArtifactBudget:
    """The runner dir's artifact dirs, oldest first, and the bytes they hold."""

    def __init__(self, *, max_bytes: int, log: Logger) -> None:
        self.max_bytes = max_bytes  # 0: no cap
        self._log = log
        self._runs: collections.deque[_Run] = collections.deque()
        self._total = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        """Bytes of the artifact dirs the budget knows of."""
        return self._total

    def scan(self, root: Path) -> None:
        """Index the artifact dirs already under ``root`` (at start-up), oldest first."""
        found: list[tuple[float, Path]] = []
        for top, dirs, _files in os.walk(root):
            if os.path.basename(top) != ARTIFACTS:
                continue
            for name in dirs:
                path = Path(top, name)
                if not path.is_symlink():
                    found.append((path.stat().st_mtime, path))
            dirs[:] = []  # a run's own files are not walked for more artifact dirs
        found.sort()
        with self._lock:
            for _mtime, path in found:
                self._append(path)
        self._prune()

    def add(self, run_dir: Path) -> None:
        """A run ended and left ``run_dir``: count it, then keep the total under the cap."""
        with self._lock:
            self._append(run_dir)
        self._prune()

    def forget(self, removed: Iterable[Path]) -> None:
        """Dirs removed by someone else (the per-CR rotation) no longer count."""
        gone = set(removed)
        if not gone:
            return
        with self._lock:
            kept = collections.deque(run for run in self._runs if run.path not in gone)
            self._total -= sum(run.size for run in self._runs if run.path in gone)
            self._runs = kept

    def _append(self, path: Path) -> None:
        run = _Run(path, dir_size(path))
        self._runs.append(run)
        self._total += run.size

    def _prune(self) -> None:
        if self.max_bytes <= 0:
            return
        spared: list[_Run] = []
        removed: list[_Run] = []
        with self._lock:
            while self._total > self.max_bytes and self._runs:
                run = self._runs.popleft()
                if _is_latest(run.path):
                    spared.append(run)  # a CR's last run stays
                    continue
                self._total -= run.size
                removed.append(run)
            self._runs.extendleft(reversed(spared))
        for run in removed:
            shutil.rmtree(run.path, ignore_errors=True)
        if removed:
            self._log.debug(
                "artifacts over the runner dir's cap removed",
                extra={"removed": len(removed), "bytes": self._total, "cap": self.max_bytes},
            )
