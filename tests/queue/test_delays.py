"""add_after: a key becomes ready at now + delay; the earliest pending time wins."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.workqueue import WorkQueue

A = ObjectKey("ns/a")


def ready_times(queue: WorkQueue, clock: FakeClock, *, until: int) -> list[int]:
    """Whole seconds (0..until) at which ``A`` was handed out."""
    seen: list[int] = []
    for second in range(until + 1):
        if second:
            clock.advance(1)
        while (key := queue.get(timeout=0)) is not None:
            assert key == A
            seen.append(second)
            queue.done(key)
    return seen


Setup = Callable[[WorkQueue], None]


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        pytest.param(lambda q: q.add_after(A, 10), [10], id="ready-after-delay"),
        pytest.param(lambda q: q.add_after(A, 0), [0], id="zero-delay-is-now"),
        pytest.param(lambda q: q.add_after(A, -3), [0], id="negative-delay-is-now"),
        pytest.param(
            lambda q: (q.add_after(A, 10), q.add_after(A, 5)), [5], id="earlier-time-wins"
        ),
        pytest.param(
            lambda q: (q.add_after(A, 5), q.add_after(A, 10)), [5], id="later-time-ignored"
        ),
        pytest.param(lambda q: (q.add_after(A, 10), q.add(A)), [0], id="add-makes-it-ready-now"),
        pytest.param(lambda q: (q.add(A), q.add_after(A, 10)), [0], id="ready-key-stays-ready"),
    ],
)
def test_ready_time(setup: Setup, expected: list[int]) -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    setup(queue)
    assert ready_times(queue, clock, until=20) == expected


def test_requeue_after_while_processing_waits_for_its_time() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add(A)
    assert queue.get(timeout=0) == A
    queue.forget(A)
    queue.add_after(A, 10)
    queue.done(A)
    assert ready_times(queue, clock, until=20) == [10]


def test_due_while_processing_runs_after_done() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add(A)
    assert queue.get(timeout=0) == A
    queue.add_after(A, 2)
    clock.advance(5)
    assert queue.get(timeout=0) is None, "still processing"
    queue.done(A)
    assert queue.get(timeout=0) == A


def test_blocked_get_wakes_when_the_clock_reaches_the_due_time() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    got: list[ObjectKey | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get()))
    getter.start()
    assert clock.await_waiters(1), "getter never blocked"
    queue.add_after(A, 10)
    clock.advance(9)
    assert not got, f"handed out before its time: {got}"
    clock.advance(1)
    getter.join(timeout=5)
    assert got == [A], f"expected the getter to receive {A!r}, saw {got}"


def test_get_timeout_is_measured_on_the_clock() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    got: list[ObjectKey | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get(timeout=5)))
    getter.start()
    assert clock.await_waiters(1), "getter never blocked"
    clock.advance(5)
    getter.join(timeout=5)
    assert not getter.is_alive(), "get(timeout=5) outlived 5 clock-seconds"
    assert got == [None]


def test_a_new_earlier_key_replans_a_waiting_getter() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after(ObjectKey("late"), 100)
    got: list[ObjectKey | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get()))
    getter.start()
    assert clock.await_waiters(1), "getter never blocked"
    queue.add_after(A, 1)
    clock.advance(1)
    getter.join(timeout=5)
    assert got == [A]
