"""Process accounting: CPU and memory of a runtime's process tree and of the machine,
read from ``/proc``, and the thread that samples them while a benchmark runs.

No cgroups: the CPU time of a process tree is, for every live process in it, its own
``utime + stime`` plus ``cutime + cstime`` — the time of the children it has reaped
(and, through them, of their reaped children). Every process a runtime starts is reaped
inside the tree (warm launchers reap the runs they fork; they are the runtime's
children), so deltas of this sum between two quiet moments are the CPU seconds the
runtime spent, Ansible included.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Self

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (index 0 is field 3, state)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields is not None else None


def cpu_split(pid: int) -> tuple[float, float]:
    """(utime + stime, cutime + cstime) of one process, in seconds."""
    fields = _stat(pid)
    if fields is None:
        return 0.0, 0.0
    own = int(fields[11]) + int(fields[12])
    reaped = int(fields[13]) + int(fields[14])
    return own / _CLK_TCK, reaped / _CLK_TCK


def cpu_seconds(root: int) -> float:
    """utime + stime + cutime + cstime over the live tree under ``root``."""
    ticks = 0
    for pid in descendants(root):
        fields = _stat(pid)
        if fields is not None:
            ticks += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return ticks / _CLK_TCK


def machine_ticks() -> tuple[int, int]:
    """(all, idle) CPU ticks of the whole machine so far, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return sum(values), values[3] + values[4]  # idle + iowait


def machine_busy(since: tuple[int, int]) -> float:
    """Fraction of the machine's CPU time that was busy since ``since`` (all processes)."""
    total, idle = machine_ticks()
    return 1 - (idle - since[1]) / max(total - since[0], 1)


def rss_bytes(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    return total


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Sampling:
    """Calls ``sample()`` every ``interval`` seconds in a thread, from ``with`` to its end.

    The one sampling loop of the benchmarks: :class:`PeakSampler` keeps a maximum, the
    soak's ``Sampler`` (``bench/scale_soak.py``) a series. ``sample()`` handles its own
    errors: what one sample cannot read is the subclass's to skip or report.
    """

    def __init__(self, *, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


class PeakSampler(Sampling):
    """Samples ``measure()`` every ``interval`` seconds in a thread; keeps the maximum."""

    def __init__(self, measure: Callable[[], float], *, interval: float = 0.25) -> None:
        super().__init__(interval=interval)
        self.peak = 0.0
        self._measure = measure

    def sample(self) -> None:
        with contextlib.suppress(Exception):
            self.peak = max(self.peak, self._measure())
