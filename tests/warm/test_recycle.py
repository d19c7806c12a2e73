"""Warm launchers are replaced after a number of runs or above an RSS cap, between runs:
the replacement starts first, new runs go to it, the old one ends once its runs did, and
no run fails or starts cold because of the swap (runner/warm/pool.py, zygote.py)."""

from __future__ import annotations

import itertools
import logging
import threading
from pathlib import Path

import pytest

from runner import warm
from runner.ansible import launch
from testkit.helpers import wait_for
from tests.warm.conftest import not_warm, ready, runner_with


def _changes(history: list[dict[str, int]]) -> dict[str, int]:
    """Per launcher name, how often the serving pid changed along ``history``."""
    counts: dict[str, int] = {}
    for before, after in itertools.pairwise(history):
        for name, pid in after.items():
            if name in before and before[name] != pid:
                counts[name] = counts.get(name, 0) + 1
    return counts


def _leftovers(pool: warm.Launchers, replaced: set[int]) -> list[int]:
    return sorted(replaced & set(pool.pids()))


def test_launchers_recycle_after_max_runs_and_every_run_stays_warm(tmp_path: Path) -> None:
    pool = warm.Launchers(max_runs=3)
    try:
        run = runner_with(pool, logging.getLogger("tests.warm.recycle"), tmp_path)
        ready(pool, run)
        history = [pool.serving()]
        results = []
        for _ in range(10):
            results.append(run("inspect"))
            history.append(pool.serving())
            # Deterministic counts: the next run waits until a replacement serves (a run
            # arriving earlier simply goes to the launcher being replaced).
            wait_for(pool.settled, describe="the replacement launcher serving", timeout=60)
        assert not_warm(results) == [], "expected every run to succeed warm"
        changes = _changes(history)
        assert len(changes) == 2 and all(n >= 3 for n in changes.values()), (
            f"expected the program and the module launcher replaced >= 3 times in 10 runs "
            f"with max_runs=3, saw {changes}"
        )
        assert pool.recycles["runs"] >= 6, pool.recycles
        replaced = {pid for serving in history[:-1] for pid in serving.values()}
        replaced -= set(history[-1].values())
        wait_for(
            lambda: _leftovers(pool, replaced),
            until=lambda pids: not pids,
            describe="every replaced launcher gone once its runs ended",
            timeout=30,
        )
    finally:
        pool.close()


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param({"max_runs": 2}, id="max-runs"),
        pytest.param({"max_rss_mib": 1}, id="rss-cap"),
    ],
)
def test_runs_in_flight_across_a_swap_all_succeed_warm(
    limits: dict[str, int], tmp_path: Path
) -> None:
    """Four runs are held in their first task while the replacements take over; their
    later tasks start modules on the new module launcher, their ansible-playbook stays on
    the old program launcher, which ends only after them."""
    reason = "runs" if "max_runs" in limits else "rss"
    pool = warm.Launchers(
        max_runs=limits.get("max_runs", 0), max_rss_mib=limits.get("max_rss_mib", 0)
    )
    try:
        run = runner_with(pool, logging.getLogger("tests.warm.recycle"), tmp_path)
        ready(pool, run)
        before = pool.serving()
        gate = tmp_path / "gate"
        results: list[launch.RunResult] = []
        lock = threading.Lock()

        def one(number: int) -> None:
            result = run(
                "gated", extravars={"gate": str(gate)}, private_data_dir=tmp_path / f"p{number}"
            )
            with lock:
                results.append(result)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        try:
            wait_for(
                lambda: pool.recycles[reason] >= 1 and pool.settled(),
                describe=f"launchers replaced ({reason}) and the replacements serving",
                timeout=90,
            )
            assert set(before.values()) <= set(pool.pids()), (
                f"expected the replaced launchers {before} alive while their runs are held, "
                f"live: {pool.pids()}"
            )
        finally:
            gate.touch()
            for thread in threads:
                thread.join(180)
        assert len(results) == 4, f"expected 4 runs to return, {len(results)} did"
        assert not_warm(results) == [], "expected every run across the swap warm"
        after = pool.serving()
        assert set(before.values()).isdisjoint(after.values()), (
            f"expected new launchers after the swap, before {before}, after {after}"
        )
        wait_for(
            lambda: _leftovers(pool, set(before.values())),
            until=lambda pids: not pids,
            describe="the replaced launchers gone once their runs ended",
            timeout=30,
        )
        assert not_warm([run("inspect")]) == [], "expected the new launchers to serve"
    finally:
        pool.close()
