"""The pool's side of recycling: starting a launcher's replacement when one is due,
knowing when it took over, and the old processes ending their runs.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.pool` as runs start. When a
launcher was handed its maximum of runs or is above the RSS cap
(:func:`runner.warm.recycle.due`), a replacement is started on the same socket
path while the old process keeps serving; the replacement takes the path over
once ready (:mod:`runner.warm.recycle` describes the hand-over) and the old one
ends once its runs did. One replacement at a time per launcher.

The idle release (:class:`IdleRelease`) ends every launcher the same way, only with no
replacement (:meth:`Succession.release`), once the pool had no run in flight and none
started for its ``idle_seconds``: its socket path is removed instead of taken over. The
next run starts the launchers again and waits for them, at most :data:`RESTART_WAIT`.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from runner.warm import recycle, spawn

log = logging.getLogger("runner.warm")

#: How long a run waits for launchers started again after an idle release before it
#: starts cold (a launcher imports its libraries in one to two seconds).
RESTART_WAIT = 5.0
#: How often that wait looks whether they serve: only their socket appearing tells.
_RESTART_STEP = 0.05
#: How soon the idle release looks again when a launcher was still starting or being
#: replaced when it was due, or to reap the processes it ended.
_RECHECK = 1.0


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

    def release(self, launcher: spawn.Launcher) -> int:
        """End ``launcher``'s process, which serves its socket and has no run: as a
        replaced one ends, but its socket path is removed rather than taken over, so no
        client reaches it any more. It is told to retire on a connection made before the
        removal (a client that looked the path up just before is still served) and ends
        once that is done. The next run starts it again. The ended process's pid."""
        assert launcher.proc is not None
        old = launcher.proc
        conn = recycle.connect(str(launcher.socket))
        with contextlib.suppress(FileNotFoundError):
            launcher.socket.unlink()
        if conn is not None:
            recycle.retire(conn)
        else:
            old.terminate()  # it does not accept; the pool has no run in flight
        self._retiring.append(old)
        launcher.proc, launcher.runs, launcher.released = None, 0, True
        self.recycles["idle"] += 1
        return old.pid


class IdleRelease:
    """Ends every launcher of the pool once it had no run in flight and none started for
    ``seconds`` (0: never): one daemon thread sleeps on the pool's lock until then, woken
    when a run starts or ends. Its methods but :meth:`await_restart` and :meth:`close`
    are called under the pool's lock."""

    def __init__(
        self,
        *,
        seconds: float,
        lock: threading.Lock,
        launchers: Callable[[], list[spawn.Launcher]],
        succession: Succession,
    ) -> None:
        """``launchers``: the pool's launchers, called locked."""
        self._seconds = seconds
        self._changed = threading.Condition(lock)
        self._launchers = launchers
        self._succession = succession
        self._in_flight: Counter[str] = Counter()  # runs by status file, until they end
        self._last = time.monotonic()  # when a run last started or ended
        self._closed = False
        self._thread: threading.Thread | None = None
        if seconds > 0:
            self._thread = threading.Thread(target=self._watch, name="warm-idle", daemon=True)
            self._thread.start()

    def started(self, run: str | None = None) -> None:
        """A run started; ``run`` (its status file) is in flight until :meth:`ended`."""
        if run is not None:
            self._in_flight[run] += 1
        self._ran()

    def ended(self, run: str) -> None:
        if self._in_flight[run] > 1:
            self._in_flight[run] -= 1
        else:
            self._in_flight.pop(run, None)
        self._ran()

    def await_restart(self, launchers: Sequence[spawn.Launcher]) -> None:
        """Wait until ``launchers``, started again after an idle release, serve, at most
        :data:`RESTART_WAIT`: the run then starts warm. One that could not start or
        exited ends the wait at once, and the run starts cold, as it would have."""
        deadline = time.monotonic() + RESTART_WAIT
        while time.monotonic() < deadline:
            with self._changed:
                starting = [
                    p
                    for p in launchers
                    if p.released
                    and not self._closed
                    and p.proc is not None
                    and p.proc.poll() is None
                    and not p.socket.exists()
                ]
            if not starting:
                return
            time.sleep(_RESTART_STEP)  # nothing but the socket appearing tells it serves

    def close(self, timeout: float) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _ran(self) -> None:
        self._last = time.monotonic()
        self._changed.notify_all()

    def _watch(self) -> None:
        with self._changed:
            while not self._closed:
                left = self._left()
                if left is None:
                    self._changed.wait()
                elif left > 0:
                    self._changed.wait(left)
                else:
                    self._release()

    def _left(self) -> float | None:
        """Seconds until the live launchers are to be released (0: now); None while a
        run is in flight or none is live (a run starting or ending wakes the thread)."""
        live = [p for p in self._launchers() if p.proc is not None and p.proc.poll() is None]
        if not live or self._in_flight:
            # Ended processes are reaped here, or they would stay zombies until a scrape.
            return _RECHECK if self._succession.retiring() else None
        left = self._last + self._seconds - time.monotonic()
        if left > 0:
            return left
        if any(not p.socket.exists() or self._succession.replacing(p) for p in live):
            return _RECHECK  # one is not serving its own socket yet
        return 0.0

    def _release(self) -> None:
        ended = {
            p.name: self._succession.release(p)
            for p in self._launchers()
            if p.proc is not None and p.proc.poll() is None
        }
        log.info(
            "warm launchers released after a time without runs; the next run starts them again",
            extra={"launchers": ended, "idle_seconds": self._seconds},
        )
