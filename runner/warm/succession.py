"""The pool's side of recycling: starting a launcher's replacement when one is due,
knowing when it took over, and the old processes ending their runs.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.pool` as runs start. When a
launcher was handed its maximum of runs or is above the RSS cap
(:func:`runner.warm.recycle.due`), a replacement is started on the same socket
path while the old process keeps serving; the replacement takes the path over
once ready (:mod:`runner.warm.recycle` describes the hand-over) and the old one
ends once its runs did. One replacement at a time per launcher.
"""

from __future__ import annotations

import logging
import subprocess
from collections import Counter

from runner.warm import recycle, spawn

log = logging.getLogger("runner.warm")


class Succession:
    """Replacements of the pool's launchers; called under the pool's lock."""

    def __init__(self, *, limits: recycle.Limits, spawner: spawn.Spawner) -> None:
        self._limits = limits
        self._spawner = spawner
        self._retiring: list[subprocess.Popen[bytes]] = []  # replaced, ending their runs
        self._rss_warned = False
        self.recycles: Counter[str] = Counter(dict.fromkeys(recycle.REASONS, 0))

    def retiring(self) -> list[subprocess.Popen[bytes]]:
        """Replaced processes still ending their runs (those that ended are reaped)."""
        self._retiring = [p for p in self._retiring if p.poll() is None]
        return list(self._retiring)

    def replacing(self, launcher: spawn.Launcher) -> bool:
        """Whether ``launcher``'s process is a replacement that has not taken its socket
        path over yet (the path is still its predecessor's socket)."""
        inode = recycle.socket_inode(launcher.socket)
        if launcher.replacing is not None and inode != launcher.replacing:
            launcher.replacing = None
        return launcher.replacing is not None

    def recycle_if_due(self, launcher: spawn.Launcher) -> None:
        """Start a replacement for a live launcher that served its maximum of runs or is
        above the RSS cap; the old one keeps serving until the new one took over, and
        ends once its runs did (see the module doc)."""
        assert launcher.proc is not None
        self._retiring = [p for p in self._retiring if p.poll() is None]  # reaped when ended
        if self.replacing(launcher):
            return  # one replacement at a time
        reason = recycle.due(self._limits, runs=launcher.runs, pid=launcher.proc.pid)
        inode = recycle.socket_inode(launcher.socket)
        if reason is None or inode is None:
            return  # nothing due, or the launcher does not serve yet
        if reason == "rss" and launcher.runs <= 1 and not self._rss_warned:
            self._rss_warned = True  # a fresh launcher is above it: replaced every run
            log.warning(
                "the warm launchers' RSS cap is below what a fresh launcher uses; "
                "they are replaced after every run",
                extra={"max_rss_mib": self._limits.max_rss_bytes // 2**20},
            )
        successor = self._spawner.start(launcher)
        if successor is None:
            return
        old = launcher.proc
        self._retiring.append(old)
        launcher.proc, launcher.runs, launcher.replacing = successor, 0, inode
        self.recycles[reason] += 1
        log.info(
            "warm launcher recycled: a replacement takes over, the old one ends after its runs",
            extra={
                "launcher": launcher.name,
                "reason": reason,
                "pid": old.pid,
                "replacement": successor.pid,
            },
        )
