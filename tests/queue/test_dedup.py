"""A key is queued once, and runs that pile up while it is processing fold into one."""

from __future__ import annotations

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.workqueue import Priority, WorkQueue

A = ObjectKey("ns/a")
B = ObjectKey("ns/b")


def drain(queue: WorkQueue) -> list[ObjectKey]:
    """Every key ready now, each marked done straight away."""
    seen: list[ObjectKey] = []
    while (key := queue.get(timeout=0)) is not None:
        seen.append(key)
        queue.done(key)
    return seen


@pytest.mark.parametrize(
    "adds",
    [
        pytest.param(3, id="three-adds"),
        pytest.param(100, id="hundred-adds"),
    ],
)
def test_waiting_key_is_queued_once(adds: int) -> None:
    queue = WorkQueue(clock=FakeClock())
    for _ in range(adds):
        queue.add(A)
    assert queue.depth() == 1, f"expected one entry, saw {queue.depth()}"
    assert drain(queue) == [A]


def test_adds_while_processing_fold_into_exactly_one_follow_up() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A)
    assert queue.get(timeout=0) == A
    for _ in range(5):
        queue.add(A)
    queue.add(A, priority=Priority.RESYNC)
    queue.add_after(A, 0)

    assert queue.get(timeout=0) is None, "a processing key must not be handed out again"
    assert (queue.depth(), queue.in_flight()) == (1, 1)

    queue.done(A)
    assert queue.get(timeout=0) == A, "the follow-up run must be released by done()"
    queue.done(A)
    assert queue.get(timeout=0) is None, "exactly one follow-up, not one per event"


def test_processing_key_does_not_block_others() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A)
    queue.add(B)
    assert queue.get(timeout=0) == A
    queue.add(A)
    assert queue.get(timeout=0) == B
    assert queue.get(timeout=0) is None
    assert queue.in_flight() == 2


def test_done_without_follow_up_leaves_queue_empty() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A)
    assert queue.get(timeout=0) == A
    queue.done(A)
    assert (len(queue), queue.in_flight()) == (0, 0)
    queue.done(A)  # a stray done() is harmless
    assert queue.get(timeout=0) is None


def test_depth_counts_ready_delayed_and_follow_ups() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A)
    queue.add_after(B, 30)
    assert queue.depth() == 2
    assert queue.get(timeout=0) == A
    assert queue.depth() == 1
    queue.add(A)
    assert (queue.depth(), len(queue), queue.in_flight()) == (2, 2, 1)
