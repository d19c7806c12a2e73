"""Detached component processes: start one, find it again from its pidfile, stop it.

Each component runs in its own session (so it is its own process-group leader and
outlives the shell that ran ``devcluster up``). The pidfile records the pid *and* the
kernel's start time of the process, so a recycled pid is never mistaken for ours and
``down`` never signals a stranger.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from devcluster import polling


@dataclass(frozen=True)
class Handle:
    pid: int
    #: clock ticks after boot when the process started (field 22 of /proc/<pid>/stat)
    start_time: int


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start_time)`` of ``pid``, or None when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; fields resume after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def spawn(*, argv: list[str], log_file: Path, pid_file: Path, append: bool = False) -> Handle:
    """Start ``argv`` detached, output to ``log_file``, and record it in ``pid_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    # posix_spawn rather than Popen: there is no Popen object to outlive (and warn about)
    # in library use, and setsid makes the child its own session and group leader.
    pid = os.posix_spawn(
        argv[0],
        argv,
        dict(os.environ),
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, str(log_file), flags, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,
    )
    stat = _stat(pid)
    # A process that died instantly has no /proc entry left to read; 0 never matches.
    handle = Handle(pid=pid, start_time=stat[1] if stat else 0)
    pid_file.write_text(f"{handle.pid} {handle.start_time}\n")
    return handle


def read(pid_file: Path) -> Handle | None:
    try:
        pid, start_time = pid_file.read_text().split()
        return Handle(pid=int(pid), start_time=int(start_time))
    except (OSError, ValueError):
        return None


def _reap(pid: int) -> None:
    # When this Python process started the component (library use), it must collect the
    # exit status, or the zombie would look alive to /proc forever.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def alive(handle: Handle) -> bool:
    _reap(handle.pid)
    stat = _stat(handle.pid)
    return stat is not None and stat[1] == handle.start_time and stat[0] not in ("Z", "X")


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def stop(handle: Handle, *, timeout: float = 10.0) -> bool:
    """SIGTERM the process group, SIGKILL it after ``timeout``; True if it ended gracefully."""
    if not alive(handle):
        return True
    # spawn() made the process a session (and group) leader, so its pid is its pgid.
    _signal_group(handle.pid, signal.SIGTERM)
    graceful = polling.wait_until(lambda: not alive(handle), timeout=timeout)
    if not graceful:
        _signal_group(handle.pid, signal.SIGKILL)
        polling.wait_until(lambda: not alive(handle), timeout=5.0)
    # Anything the component forked shares its group; make sure none outlives it.
    if _group_exists(handle.pid):
        _signal_group(handle.pid, signal.SIGKILL)
    return graceful


def rss_kib(handle: Handle) -> int:
    """Resident set size of the process in KiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{handle.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
