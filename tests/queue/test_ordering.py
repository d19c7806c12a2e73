"""New events are served before the resync backlog; FIFO within a priority."""

from __future__ import annotations

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.workqueue import Priority, WorkQueue

EVENT = Priority.EVENT
RESYNC = Priority.RESYNC


def drain(queue: WorkQueue) -> list[str]:
    seen: list[str] = []
    while (key := queue.get(timeout=0)) is not None:
        seen.append(key)
        queue.done(key)
    return seen


@pytest.mark.parametrize(
    ("adds", "expected"),
    [
        pytest.param(
            [("a", RESYNC), ("b", RESYNC), ("c", EVENT), ("d", EVENT), ("e", RESYNC)],
            ["c", "d", "a", "b", "e"],
            id="events-jump-the-backlog",
        ),
        pytest.param(
            [("a", EVENT), ("b", EVENT), ("c", EVENT)],
            ["a", "b", "c"],
            id="fifo-within-event",
        ),
        pytest.param(
            [("a", RESYNC), ("b", RESYNC), ("b", EVENT)],
            ["b", "a"],
            id="event-upgrades-a-waiting-resync",
        ),
        pytest.param(
            [("a", EVENT), ("b", RESYNC), ("a", RESYNC)],
            ["a", "b"],
            id="resync-never-downgrades",
        ),
    ],
)
def test_serving_order(adds: list[tuple[str, Priority]], expected: list[str]) -> None:
    queue = WorkQueue(clock=FakeClock())
    for key, priority in adds:
        queue.add(ObjectKey(key), priority=priority)
    assert drain(queue) == expected


def test_fifo_follows_the_clock() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after(ObjectKey("late"), 5, priority=EVENT)
    queue.add_after(ObjectKey("early"), 2, priority=EVENT)
    clock.advance(3)
    queue.add(ObjectKey("now"))
    clock.advance(2)
    assert drain(queue) == ["early", "now", "late"]


def test_delayed_resync_does_not_overtake_an_event() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after(ObjectKey("period"), 1)
    clock.advance(1)
    queue.add(ObjectKey("event"))
    assert drain(queue) == ["event", "period"]
