"""The chaos benchmark's runs, read from its role's records: when each run lived, and overlaps.

Part of ``make chaos`` (``python -m bench.chaos``). Every run of the chaos role appends a
``start`` and an ``end`` line to its CR's file (``bench/roles/chaos/lookup_plugins``).
A run that is killed (its runner was ``kill -9``-ed, its launcher ended it) writes
no ``end``: :class:`Records` polls the files and, for each run still open, whether
its ansible-playbook process is alive, so such a run's end is known to lie between
the last moment it was seen alive and the first moment it was seen gone.

Two runs of one CR overlap when the later one started before the earlier one
ended; with an unknown end, *definitely* if it started while the earlier one was
still seen alive, *possibly* if it started within the polling gap after that.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Seconds between two reads of the records and liveness checks of open runs.
POLL = 0.2


@dataclass
class Run:
    """One run of the role for one CR (``key``: ``<namespace>.<name>``)."""

    key: str
    run: str
    pid: int
    start: float
    generation: int | None
    started_at: int | None = None  # the process's start time in ticks, against pid reuse
    end: float | None = None  # from the role's own end record
    alive_until: float | None = None  # no end record: last seen alive
    dead_by: float | None = None  # no end record: first seen gone

    @property
    def killed(self) -> bool:
        return self.end is None and self.dead_by is not None

    @property
    def open(self) -> bool:
        return self.end is None and self.dead_by is None


@dataclass(frozen=True)
class Overlap:
    key: str
    first: Run
    second: Run
    certain: bool

    def describe(self) -> str:
        ends = (
            f"ended {self.first.end:.3f}"
            if self.first.end is not None
            else f"killed, seen alive until {self.first.alive_until or self.first.start:.3f}"
        )
        return (
            f"{self.key}: run {self.first.run} (pid {self.first.pid}, generation "
            f"{self.first.generation}, {ends}) and run {self.second.run} (pid "
            f"{self.second.pid}, generation {self.second.generation}, started "
            f"{self.second.start:.3f}){'' if self.certain else ' (within the polling gap)'}"
        )


def _start_ticks(pid: int) -> int | None:
    """The process's start time (field 22 of /proc/<pid>/stat), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


class Records:
    """Reads the record files of ``directory`` in a thread; keeps every run seen."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._offsets: dict[Path, int] = {}
        self._runs: dict[tuple[str, str], Run] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Records:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(POLL):
            self.poll()

    def poll(self) -> None:
        now = time.time()
        with self._lock:
            for path in sorted(self.directory.glob("*.jsonl")):
                for line in self._new_lines(path):
                    self._add(path.stem, line, now=now)
            for run in self._runs.values():
                if run.open:
                    ticks = _start_ticks(run.pid)
                    if ticks is not None and ticks == run.started_at:
                        run.alive_until = now
                    else:
                        run.dead_by = now

    def _new_lines(self, path: Path) -> list[dict[str, Any]]:
        offset = self._offsets.get(path, 0)
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
        self._offsets[path] = offset + len(complete)
        lines = []
        for raw in complete.splitlines():
            with contextlib.suppress(ValueError):
                lines.append(json.loads(raw))
        return lines

    def _add(self, key: str, line: dict[str, Any], *, now: float) -> None:
        ident = (key, str(line.get("run")))
        if line.get("event") == "start":
            pid = int(line.get("pid") or 0)
            run = Run(
                key=key,
                run=ident[1],
                pid=pid,
                start=float(line["t"]),
                generation=line.get("generation"),
                started_at=_start_ticks(pid),
            )
            if run.started_at is None:  # already gone when first read
                run.alive_until, run.dead_by = run.start, now
            self._runs.setdefault(ident, run)
        elif line.get("event") == "end" and ident in self._runs:
            found = self._runs[ident]
            found.end = float(line["t"])
            found.dead_by = None

    def runs(self) -> list[Run]:
        with self._lock:
            return list(self._runs.values())

    def count(self) -> int:
        with self._lock:
            return len(self._runs)

    def running(self) -> int:
        with self._lock:
            return sum(1 for run in self._runs.values() if run.open)


def overlaps(runs: list[Run]) -> list[Overlap]:
    """Every pair of runs of one CR whose lifetimes intersect."""
    by_key: dict[str, list[Run]] = {}
    for run in runs:
        by_key.setdefault(run.key, []).append(run)
    found = []
    for key, group in sorted(by_key.items()):
        group.sort(key=lambda run: run.start)
        for index, first in enumerate(group):
            for second in group[index + 1 :]:
                certain = _overlap(first, second)
                if certain is not None:
                    found.append(Overlap(key, first, second, certain=certain))
    return found


def _overlap(first: Run, second: Run) -> bool | None:
    """Whether ``second`` (started later) overlaps ``first``: surely, possibly, or not (None)."""
    if first.end is not None:
        return True if second.start < first.end else None
    if first.dead_by is None:  # never seen to end: still running
        return True
    if second.start < (first.alive_until or first.start):
        return True
    return False if second.start < first.dead_by else None
