"""Failed keys retry after base * 2**failures, capped; forget() resets the count."""

from __future__ import annotations

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.workqueue import Priority, WorkQueue

A = ObjectKey("ns/a")


def delay_of_next_retry(queue: WorkQueue, clock: FakeClock) -> float:
    """Fail ``A`` once more and return how long its retry waited (to 0.5 s)."""
    queue.add_rate_limited(A)
    waited = 0.0
    while (key := queue.get(timeout=0)) is None:
        clock.advance(0.5)
        waited += 0.5
    assert key == A
    queue.done(A)
    return waited


@pytest.mark.parametrize(
    ("base", "cap", "expected"),
    [
        pytest.param(
            1.0,
            300.0,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300],
            id="defaults-double-then-cap",
        ),
        pytest.param(0.5, 3.0, [0.5, 1, 2, 3, 3], id="custom-base-and-cap"),
    ],
)
def test_backoff_grows_and_caps(base: float, cap: float, expected: list[float]) -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, base_delay=base, max_delay=cap)
    delays = [delay_of_next_retry(queue, clock) for _ in expected]
    assert delays == expected
    assert queue.failures(A) == len(expected)


def test_defaults_are_one_second_to_five_minutes() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    assert delay_of_next_retry(queue, clock) == 1.0
    for _ in range(20):
        queue.add_rate_limited(A)
    assert queue.get(timeout=0) is None
    clock.advance(300)
    assert queue.get(timeout=0) == A


def test_forget_resets_the_backoff() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    for _ in range(4):
        delay_of_next_retry(queue, clock)
    assert queue.failures(A) == 4
    queue.forget(A)
    assert queue.failures(A) == 0
    assert delay_of_next_retry(queue, clock) == 1.0


def test_many_failures_do_not_overflow() -> None:
    queue = WorkQueue(clock=FakeClock())
    for _ in range(2000):
        queue.add_rate_limited(A)
    assert queue.failures(A) == 2000


def test_retry_keeps_the_priority_it_was_served_at() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add(A, priority=Priority.RESYNC)
    assert queue.get(timeout=0) == A
    queue.add_rate_limited(A)
    queue.done(A)
    clock.advance(1)
    queue.add(ObjectKey("event"))
    order = [queue.get(timeout=0), queue.get(timeout=0)]
    assert order == ["event", A], "a retried resync must not overtake a new event"
