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
    ("cap_kib", "expected"),
    [
        pytest.param(0, ["a/1", "b/1", "a/2", "b/2", "a/3"], id="no-cap-keeps-all"),
        pytest.param(100, ["a/1", "b/1", "a/2", "b/2", "a/3"], id="under-the-cap"),
        pytest.param(30, ["a/2", "b/2", "a/3"], id="oldest-first-across-crs"),
        pytest.param(25, ["b/2", "a/3"], id="down-to-the-cap"),
        pytest.param(1, ["b/2", "a/3"], id="each-cr-keeps-its-latest"),
    ],
)
def test_scan_prunes_the_oldest_runs_of_any_cr(
    tmp_path: Path, cap_kib: int, expected: list[str]
) -> None:
    order = [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2"), ("a", "3")]
    runs = [
        make_run(tmp_path, cr, ident, size=10 * KIB, mtime=1000 + i)
        for i, (cr, ident) in enumerate(order)
    ]
    budget = retention.ArtifactBudget(max_bytes=cap_kib * KIB, log=LOG)
    budget.scan(tmp_path)
    assert alive(runs) == expected, f"cap {cap_kib} KiB: expected {expected}, kept {alive(runs)}"
    assert budget.total == 10 * KIB * len(expected), (
        f"expected the budget to count {len(expected)} runs of 10 KiB, saw {budget.total} bytes"
    )


def test_each_run_added_keeps_the_total_under_the_cap(tmp_path: Path) -> None:
    budget = retention.ArtifactBudget(max_bytes=45 * KIB, log=LOG)
    budget.scan(tmp_path)
    runs = []
    for i in range(20):
        run = make_run(tmp_path, f"cr{i % 4}", f"{i:02d}", size=10 * KIB, mtime=1000 + i)
        budget.add(run)
        runs.append(run)
        assert budget.total <= 45 * KIB, f"after run {i}: {budget.total} bytes over the cap"
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
    assert sorted(p.name for p in removed) == ["0", "1", "2"], f"rotation removed {removed}"
    assert budget.total == 20 * KIB, f"expected 2 runs of 10 KiB counted, saw {budget.total} bytes"
