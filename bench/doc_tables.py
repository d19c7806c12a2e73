"""The tables the benchmarks write into docs/performance.md (``--write-doc``).

A benchmark measures (``bench/compare.py``), then this module turns its figures into
what the doc shows: :func:`side_by_side`, ``make bench-compare``'s table, is a pure
function of the figures; :func:`paragraph` says how they were taken (:class:`Provenance`:
date, commit, the load average seen while the run went, versions, the arguments); and
:func:`write` puts both between the doc's two markers (:class:`Markers`), leaving every
line outside them as written by hand.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import math
import platform
import subprocess
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import accounting, tables, workloads

MiB = 1024 * 1024

#: The columns' names in the doc; a runtime not named here shows as itself.
SHOWN = {"ansible-operator": "ansible-operator v1.31", "warm": "ours, warm", "cold": "ours, cold"}

Figures = Mapping[str, Mapping[str, Mapping[str, Any]]]  # workload → runtime → figures


@dataclass(frozen=True)
class Markers:
    """``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``: a doc's generated block."""

    name: str

    @property
    def begin(self) -> str:
        return f"<!-- {self.name}:begin -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"


class MarkersMissingError(ValueError):
    """The doc does not hold exactly one begin marker followed by one end marker."""


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """How one run's figures were taken, as the doc's paragraph above the table says."""

    date: str
    commit: str  # short hash, ``-dirty`` when tracked files differed from it
    load: tuple[float, float]  # 1-minute load average, lowest and highest sampled
    versions: tuple[tuple[str, str], ...]  # (name, version)
    command: str


class LoadRange(accounting.Sampling):
    """The lowest and highest 1-minute load average (``/proc/loadavg``) while it runs."""

    def __init__(self, *, interval: float = 10.0) -> None:
        super().__init__(interval=interval)
        self.low = math.inf
        self.high = -math.inf

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            load = float(Path("/proc/loadavg").read_text().split()[0])
            self.low, self.high = min(self.low, load), max(self.high, load)

    @property
    def seen(self) -> tuple[float, float]:
        return (self.low, self.high) if self.low <= self.high else (math.nan, math.nan)


def side_by_side(results: Figures, names: Sequence[str]) -> str:
    """``make bench-compare``'s table: one column per runtime (``names[0]``, ansible-operator,
    first), then each other runtime's ratio to it. A row shows only when every runtime
    has its figure; labels carry the counts the run used (CRs, seconds)."""
    base, others = names[0], list(names[1:])
    rows: list[list[str]] = []

    def row(
        label: str,
        key: str,
        fmt: Callable[[Any], str],
        workload: str = "one-task",
        *,
        ratios: bool = True,
        suffix: Mapping[str, str] | None = None,
    ) -> None:
        figures = results.get(workload, {})
        if not all(key in figures.get(n, {}) for n in names):
            return
        values = [figures[n][key] for n in names]
        cells = [fmt(v) + (suffix or {}).get(n, "") for n, v in zip(names, values, strict=True)]
        plain = [tables.median(v) if isinstance(v, list) else v for v in values]
        shown = [tables.ratio(p, plain[0]) if ratios else "" for p in plain[1:]]
        rows.append([label, *cells, *shown])

    def common(key: str, fmt: Callable[[Any], str] = str, workload: str = "one-task") -> str:
        """One figure of the run as the runtimes saw it: ``300``, or ``61/63`` if they differ."""
        figures = results.get(workload, {})
        seen = [fmt(figures[n][key]) for n in names if key in figures.get(n, {})]
        return "/".join(dict.fromkeys(seen)) or "?"

    two = "{:.2f}".format
    row("one-task role: CR → Successful", "latency_s", _seconds)
    row("one-task role: CPU-s per reconcile", "cpu_per_run_s", two)
    row("one-task role: runs per new CR", "runs_per_new_cr", two, ratios=False)
    row(f"{common('burst_crs')} CRs at once → all Successful", "burst_s", _seconds)
    row("CPU-s per reconcile in that burst", "burst_cpu_per_run_s", two)
    busy = "machine CPU busy in that burst (all processes)"
    row(busy, "burst_machine_busy", _percent, ratios=False)
    row("process tree RSS, peak in that burst", "burst_tree_rss_peak_bytes", _mib)
    patches = f"{common('patches')} spec patches within ~{common('patches_window_s', _whole)} s"
    row(f"runs for {patches}", "runs_for_patches", str, ratios=False)
    idle = f"idle ({common('idle_crs')} CRs, {common('idle_s', _whole)} s)"
    row(f"{idle}: CPU of the process tree", "idle_cpu_percent", "{:.2f} %".format, ratios=False)
    row("idle: runs", "idle_runs", str, ratios=False)
    row("idle: RSS of the runtime (ours: runner + launchers)", "idle_rss_bytes", _mib)
    row("idle: RSS of the whole process tree", "idle_tree_rss_bytes", _mib)
    released = (  # released_after_s counts from the harness's quiet, after the last run
        f"idle again, once the launchers' idle release ({common('launcher_idle_s', _whole)} s"
        " without a run) has passed: RSS of the runtime"
    )
    left = {  # the release did not happen within the wait: say so in the cell
        n: f" ({f['released_launchers']} launchers left)"
        for n, f in results.get("one-task", {}).items()
        if f.get("released_launchers")
    }
    row(released, "released_rss_bytes", _mib, suffix=left)
    restart = f"restart with {common('backlog_crs')} CRs"
    row("restart: CRs in the backlog", "backlog_crs", str, ratios=False)
    row(f"{restart}: a new CR behind the backlog → Successful", "backlog_new_cr_s", _seconds)
    row(f"{restart}: whole backlog reconciled after", "backlog_drained_s", _seconds)
    mem = "memcached"
    row("Memcached role: CR → its pods Running, in status", "latency_s", _seconds, mem)
    row("Memcached role: CPU-s per reconcile", "cpu_per_run_s", two, mem)
    asked = {  # ours count the runs after which the role asked to run again
        n: f" ({f['requeued_per_new_cr']:.2f})"
        for n, f in results.get(mem, {}).items()
        if f.get("requeued_per_new_cr") is not None
    }
    runs = "Memcached role: runs per new CR (of them `requeue_after`)"
    row(runs, "runs_per_new_cr", two, mem, ratios=False, suffix=asked)
    header = ["scenario", *(SHOWN.get(n, n) for n in names)]
    header += [f"{SHOWN.get(n, n).removeprefix('ours, ')} / {base}" for n in others]
    return tables.table(header, rows)


def paragraph(provenance: Provenance) -> str:
    """The sentence above the table: when, at which commit, on how loaded a machine."""
    low, high = provenance.load
    versions = ", ".join(f"{name} {version}" for name, version in provenance.versions)
    text = (
        f"Results from one run on {provenance.date} at commit `{provenance.commit}`,"
        f" load average {low:.1f}-{high:.1f} (1-minute, sampled during the run),"
        f" {versions}: `{provenance.command}`. Ratios are ours divided by"
        " ansible-operator's."
    )
    return textwrap.fill(text, width=80, break_long_words=False, break_on_hyphens=False)


def replace_marked(text: str, block: str, *, markers: Markers, path: Path) -> str:
    """``text`` with what lies between ``markers`` replaced by ``block``; all else as is.

    Raises :class:`MarkersMissingError` (naming ``path`` and both markers) unless ``text``
    holds exactly one begin marker and one end marker after it.
    """
    begin = text.find(markers.begin)
    end = text.find(markers.end, begin + 1) if begin >= 0 else -1
    if begin < 0 or end < 0 or text.count(markers.begin) != 1 or text.count(markers.end) != 1:
        raise MarkersMissingError(
            f"{path}: expected one {markers.begin} line and one {markers.end} line after it,"
            " around the generated table; add them (everything outside stays hand-written)"
        )
    head = text[: begin + len(markers.begin)]
    # blank lines around the block: a table must not run into a marker line
    return f"{head}\n\n{block.strip()}\n\n{text[end:]}"


def check(path: Path, *, markers: Markers) -> None:
    """Raise before a long run when ``path`` cannot take its table (no file, no markers)."""
    replace_marked(path.read_text(), "", markers=markers, path=path)


def write(path: Path, block: str, *, markers: Markers) -> None:
    path.write_text(replace_marked(path.read_text(), block, markers=markers, path=path))


def provenance(*, load: tuple[float, float], command: str) -> Provenance:
    """This run's :class:`Provenance`: today, this checkout's commit, our Ansible's version."""
    return Provenance(
        date=datetime.date.today().isoformat(),
        commit=commit(),
        load=load,
        versions=(
            ("ansible-core", importlib.metadata.version("ansible-core")),
            ("Python", platform.python_version()),
        ),
        command=command,
    )


def commit() -> str:
    """``git rev-parse --short HEAD``, with ``-dirty`` when tracked files differ from it."""

    def git(*args: str) -> str:
        # --no-optional-locks: reading the status must not rewrite the index
        done = subprocess.run(
            ["git", "--no-optional-locks", *args],
            cwd=workloads.ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    try:
        short = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{short}-dirty" if dirty else short


def _seconds(value: Any) -> str:
    return tables.spread(value) if isinstance(value, list) else f"{value:.1f} s"


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


def _mib(value: float) -> str:
    return f"{value / MiB:.0f} MiB"


def _whole(value: float) -> str:
    return str(round(value))
