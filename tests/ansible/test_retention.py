"""The runner dir's artifacts stay under their cap across CRs, and each CR keeps its last run."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from runner.ansible import privatedir, retention

LOG = logging.getLogger("test")
KIB = 1024


def make_run(root: Path, cr: str, ident: str, *, size: int, mtime: float) -> Path:
    """``<root>/<cr>/artifacts/<ident>`` holding ``size`` bytes, last modified at ``mtime``."""
    run = root / cr / retention.ARTIFACTS / ident
    (run / "job_events").mkdir(parents=True)
    (run / "job_events" / "1.json").write_bytes(b"x" * (size - 10))
    (run / "stdout").write_bytes(b"y" * 10)
    os.utime(run, (mtime, mtime))
    privatedir.link_latest(run)
    return run


def alive(runs: list[Path]) -> list[str]:
    return [f"{run.parent.parent.name}/{run.name}" for run in runs if run.exists()]


@pytest.mark.parametrize(
    ("cap_runs", "expected"),
    [
        pytest.param(0, ["a/1", "b/1", "a/2", "b/2", "a/3"], id="no-cap-keeps-all"),
        pytest.param(10, ["a/1", "b/1", "a/2", "b/2", "a/3"], id="under-the-cap"),
        pytest.param(3, ["a/2", "b/2", "a/3"], id="oldest-first-across-crs"),
        pytest.param(2.5, ["b/2", "a/3"], id="down-to-the-cap"),
        pytest.param(0.01, ["b/2", "a/3"], id="each-cr-keeps-its-latest"),
    ],
)
def test_scan_prunes_the_oldest_runs_of_any_cr(
    tmp_path: Path, cap_runs: float, expected: list[str]
) -> None:
    order = [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2"), ("a", "3")]
    runs = [
        make_run(tmp_path, cr, ident, size=10 * KIB, mtime=1000 + i)
        for i, (cr, ident) in enumerate(order)
    ]
    unit = retention.dir_size(runs[0])  # one run on this file system's blocks
    budget = retention.ArtifactBudget(max_bytes=int(cap_runs * unit), log=LOG)
    budget.scan(tmp_path)
    assert alive(runs) == expected, f"cap {cap_runs} runs: expected {expected}, kept {alive(runs)}"
    assert budget.total == unit * len(expected), (
        f"expected the budget to count {len(expected)} runs of {unit} bytes, saw {budget.total}"
    )


def test_the_size_is_what_the_files_take_on_disk(tmp_path: Path) -> None:
    run = make_run(tmp_path, "a", "1", size=10 * KIB, mtime=1000)
    files = [path for path in run.rglob("*") if path.is_file()]
    on_disk = sum(os.lstat(path).st_blocks * 512 for path in files)
    assert retention.dir_size(run) == on_disk, (
        f"expected the allocated bytes ({on_disk}, as du counts), saw {retention.dir_size(run)}"
    )
    assert on_disk >= 10 * KIB, f"expected at least the files' length on disk, saw {on_disk}"


def test_each_run_added_keeps_the_total_under_the_cap(tmp_path: Path) -> None:
    first = make_run(tmp_path, "cr0", "00", size=10 * KIB, mtime=1000)
    cap = int(4.5 * retention.dir_size(first))
    budget = retention.ArtifactBudget(max_bytes=cap, log=LOG)
    budget.scan(tmp_path)
    runs = [first]
    for i in range(1, 20):
        run = make_run(tmp_path, f"cr{i % 4}", f"{i:02d}", size=10 * KIB, mtime=1000 + i)
        budget.add(run)
        runs.append(run)
        assert budget.total <= cap, f"after run {i}: {budget.total} bytes over the cap {cap}"
    assert alive(runs) == ["cr0/16", "cr1/17", "cr2/18", "cr3/19"], (
        f"expected only each CR's latest run, kept {alive(runs)}"
    )


def test_runs_rotated_per_cr_no_longer_count(tmp_path: Path) -> None:
    budget = retention.ArtifactBudget(max_bytes=0, log=LOG)
    runs = [make_run(tmp_path, "a", str(i), size=10 * KIB, mtime=1000 + i) for i in range(5)]
    for run in runs:
        budget.add(run)
    removed = privatedir.rotate(runs[0].parent, keep=2, log=LOG)
    budget.forget(removed)
    unit = retention.dir_size(runs[-1])
    assert sorted(p.name for p in removed) == ["0", "1", "2"], f"rotation removed {removed}"
    assert budget.total == 2 * unit, f"expected 2 runs of {unit} bytes counted, saw {budget.total}"
