"""A burst of edits to one key costs two runs: the one it starts and one follow-up.

With ``settle`` the follow-up of a run that ended while edits were still arriving
waits until they stop (at most ``settle.HOLD_MAX`` after the run), so the follow-up reads
the last edit instead of the queue starting one run per run time.
"""

from __future__ import annotations

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue import settle, trigger
from runner.queue.workqueue import WorkQueue

A = ObjectKey("ns/a")
EDIT = trigger.Trigger(trigger.Kind.GENERATION, "generation 2")


def burst(
    *, run_seconds: float, edits: int = 20, gap: float = 0.045, settle: float = 0.5
) -> list[trigger.Trigger]:
    """``edits`` adds ``gap`` apart, one worker whose runs take ``run_seconds``: the runs."""
    clock = FakeClock()
    queue = WorkQueue(clock=clock, settle_after=settle)
    runs: list[trigger.Trigger] = []
    running_until: float | None = None
    times = [index * gap for index in range(edits)]
    step = 0.005
    while times or running_until is not None or queue.depth():
        now = clock.now()
        while times and times[0] <= now + 1e-9:
            times.pop(0)
            queue.add(A, why=EDIT)
        if running_until is not None and now >= running_until - 1e-9:
            queue.done(A)
            running_until = None
        if running_until is None and (key := queue.get(timeout=0)) is not None:
            runs.append(queue.trigger_of(key))
            running_until = now + run_seconds
        clock.advance(step)
        assert clock.now() < 60, "the burst never settled"
    return runs


@pytest.mark.parametrize(
    "run_seconds",
    [
        pytest.param(0.05, id="runs-shorter-than-the-gap"),
        pytest.param(0.27, id="warm-runs"),
        pytest.param(0.6, id="loaded-machine-runs"),
        pytest.param(2.0, id="cold-runs"),
    ],
)
def test_burst_costs_two_runs(run_seconds: float) -> None:
    runs = burst(run_seconds=run_seconds)
    assert len(runs) == 2, f"expected 2 runs for 20 edits, saw {len(runs)}: {runs}"
    assert runs[1].folded == 18, f"expected the follow-up to fold the other 19 edits, saw {runs[1]}"


def test_without_settle_fast_runs_chase_the_burst() -> None:
    runs = burst(run_seconds=0.27, settle=0.0)
    assert len(runs) > 2, f"expected the old behaviour, one run per run time, saw {runs}"


def test_idle_key_runs_at_once() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, settle_after=0.5)
    queue.add(A)
    assert queue.get(timeout=0) == A, "a key that is not running must not wait for quiet"
    clock.advance(1.0)  # the run took a second; nothing arrived meanwhile
    queue.done(A)
    queue.add(A)
    assert queue.get(timeout=0) == A, "an edit after a quiet run must run at once"


def test_follow_up_of_an_early_edit_runs_at_once() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, settle_after=0.5)
    queue.add(A)
    assert queue.get(timeout=0) == A
    queue.add(A)  # early in the run
    clock.advance(1.0)
    queue.done(A)
    assert queue.get(timeout=0) == A, "quiet for longer than settle: no hold"


def test_hold_is_bounded_by_hold_max() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, settle_after=0.5)
    queue.add(A)
    assert queue.get(timeout=0) == A
    queue.add(A)
    queue.done(A)
    for _ in range(100):  # edits every 0.1 s, never quiet
        clock.advance(0.1)
        queue.add(A)
        if queue.get(timeout=0) == A:
            break
    assert clock.now() == pytest.approx(settle.HOLD_MAX, abs=0.11), (
        f"expected the held follow-up to run {settle.HOLD_MAX} s after its run, "
        f"it ran at {clock.now():.2f} s"
    )
