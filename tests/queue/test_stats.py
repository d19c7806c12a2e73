"""What the queue reports for client-go's workqueue_* metrics, on the fake clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.meter import Stats
from runner.queue.workqueue import WorkQueue

A = ObjectKey("ns/a")
B = ObjectKey("ns/b")


class Recorder:
    def __init__(self) -> None:
        self.waited: list[float] = []
        self.held: list[float] = []

    def queued(self, seconds: float) -> None:
        self.waited.append(seconds)

    def worked(self, seconds: float) -> None:
        self.held.append(seconds)


def setup() -> tuple[WorkQueue, FakeClock, Recorder]:
    clock = FakeClock()
    seen = Recorder()
    return WorkQueue(clock=clock, observer=seen), clock, seen


def take(queue: WorkQueue) -> ObjectKey:
    key = queue.get(timeout=0)
    assert key is not None, "expected a ready key, the queue handed out none"
    return key


def test_wait_is_measured_from_the_add() -> None:
    queue, clock, seen = setup()
    queue.add(A)
    clock.advance(3)
    take(queue)
    clock.advance(2)
    queue.done(A)
    assert (seen.waited, seen.held) == ([3.0], [2.0]), (
        f"expected waited [3.0] and held [2.0], saw {seen.waited} and {seen.held}"
    )


def test_a_delayed_key_waits_from_its_due_time() -> None:
    queue, clock, seen = setup()
    queue.add_after(A, 5)
    clock.advance(4)
    assert queue.stats().ready == 0, "a key not yet due counted as ready"
    clock.advance(3)  # due at 5, handed out at 7
    take(queue)
    assert seen.waited == [2.0], f"expected a 2 s wait after the due time, saw {seen.waited}"


def test_a_follow_up_of_a_running_key_waits_until_it_is_handed_out() -> None:
    """client-go counts it ready (depth) from the add, while the first run goes on."""
    queue, clock, seen = setup()
    queue.add(A)
    take(queue)
    clock.advance(1)
    queue.add(A)
    assert queue.stats().ready == 1, f"follow-up not counted as ready: {queue.stats()}"
    clock.advance(4)
    queue.done(A)
    take(queue)
    assert (seen.waited, seen.held) == ([0.0, 4.0], [5.0]), (
        f"expected waited [0, 4] and held [5], saw {seen.waited} and {seen.held}"
    )


Step = Callable[[WorkQueue, FakeClock], object]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([], Stats(0, 0, 0, 0.0, 0.0), id="empty"),
        pytest.param(
            [lambda q, c: q.add(A), lambda q, c: q.add(A), lambda q, c: q.add(B)],
            Stats(2, 2, 0, 0.0, 0.0),
            id="repeated-adds-fold",
        ),
        pytest.param(
            [lambda q, c: q.add_after(A, 10), lambda q, c: q.add_rate_limited(B)],
            Stats(0, 0, 2, 0.0, 0.0),
            id="delayed-keys-are-retries-not-adds",
        ),
        pytest.param(
            [lambda q, c: q.add_after(A, 10), lambda q, c: c.advance(10)],
            Stats(1, 1, 1, 0.0, 0.0),
            id="a-delayed-key-is-added-when-due",
        ),
        pytest.param(
            [
                lambda q, c: (q.add(A), q.add(B)),
                lambda q, c: q.get(timeout=0),
                lambda q, c: c.advance(2),
                lambda q, c: q.get(timeout=0),
                lambda q, c: c.advance(3),
            ],
            Stats(0, 2, 0, 8.0, 5.0),
            id="two-keys-held-for-5-and-3-seconds",
        ),
        pytest.param(
            [
                lambda q, c: q.add(A),
                lambda q, c: q.get(timeout=0),
                lambda q, c: c.advance(2),
                lambda q, c: q.done(A),
            ],
            Stats(0, 1, 0, 0.0, 0.0),
            id="done-ends-the-work",
        ),
        pytest.param(
            [lambda q, c: q.shutdown(), lambda q, c: (q.add(A), q.add_after(B, 1))],
            Stats(0, 0, 0, 0.0, 0.0),
            id="nothing-counts-after-shutdown",
        ),
    ],
)
def test_stats(steps: list[Step], expected: Stats) -> None:
    queue, clock, _ = setup()
    for step in steps:
        step(queue, clock)
    assert queue.stats() == expected, f"expected {expected}, saw {queue.stats()}"


def test_adds_never_decrease_as_keys_are_handed_out() -> None:
    queue, clock, _ = setup()
    seen = []
    for key in (A, B):
        queue.add(key)
        seen.append(queue.stats().adds)
    for _ in range(2):
        key = take(queue)
        seen.append(queue.stats().adds)
        queue.done(key)
    queue.add_after(A, 1)
    clock.advance(1)
    seen.append(queue.stats().adds)
    assert seen == [1, 2, 2, 2, 3], f"expected adds 1, 2, 2, 2, 3; saw {seen}"
