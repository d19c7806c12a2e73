"""Each queued key carries why it will run; coalesced adds keep the one that decides
when it runs and count the others."""

from __future__ import annotations

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue import trigger
from runner.queue.workqueue import Priority, WorkQueue

A = ObjectKey("ns/a")
CREATED = trigger.Trigger(trigger.Kind.CREATED)
GEN2 = trigger.Trigger(trigger.Kind.GENERATION, "generation 2")
RESYNC = trigger.Trigger(trigger.Kind.RESYNC, "reconcile period, after 600s")
CHILD = trigger.dependent(kind="ConfigMap", namespace="ns", name="c", change="deleted")


def taken(queue: WorkQueue) -> trigger.Trigger:
    key = queue.get(timeout=0)
    assert key == A, f"expected {A} to be ready, saw {key}"
    why = queue.trigger_of(key)
    queue.done(key)
    return why


def test_a_single_add_keeps_its_trigger() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A, why=CREATED)
    why = taken(queue)
    assert why == CREATED, f"expected {CREATED}, saw {why}"
    assert queue.trigger_of(A) == trigger.OTHER, "after done() the key holds no trigger"


def test_folded_adds_keep_the_first_and_count_the_rest() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A, why=CREATED)
    queue.add(A, why=GEN2)
    queue.add(A, why=CHILD)
    why = taken(queue)
    assert (why.kind, why.folded) == (trigger.Kind.CREATED, 2), f"saw {why}"
    assert why.describe() == "created (+2 more)", why.describe()


@pytest.mark.parametrize(
    ("later", "priority"),
    [
        pytest.param(GEN2, Priority.EVENT, id="event-before-a-pending-resync"),
        pytest.param(CHILD, Priority.RESYNC, id="sooner-at-the-same-priority"),
    ],
)
def test_an_add_that_makes_the_key_due_sooner_names_the_run(
    later: trigger.Trigger, priority: Priority
) -> None:
    """The resync it brings forward is not counted: the run re-adds its own period."""
    queue = WorkQueue(clock=FakeClock())
    queue.add_after(A, 600, why=RESYNC)
    queue.add(A, priority=priority, why=later)
    why = taken(queue)
    assert why == later, f"expected {later} to name the run, saw {why}"


def test_an_event_overtaking_a_ready_restart_counts_it() -> None:
    queue = WorkQueue(clock=FakeClock())
    restart = trigger.Trigger(trigger.Kind.RESTART)
    queue.add(A, priority=Priority.RESYNC, why=restart)
    queue.add(A, priority=Priority.EVENT, why=GEN2)
    why = taken(queue)
    assert (why.kind, why.folded) == (trigger.Kind.GENERATION, 1), f"saw {why}"


def test_a_failure_retries_with_the_retry_trigger() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, base_delay=1.0)
    queue.add(A, why=CREATED)
    assert queue.get(timeout=0) == A
    queue.add_rate_limited(A)
    queue.done(A)
    clock.advance(1.0)
    why = taken(queue)
    assert (why.kind, why.detail) == (trigger.Kind.RETRY, "attempt 1"), f"saw {why}"


def test_an_add_while_running_names_the_follow_up() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(A, why=CREATED)
    assert queue.get(timeout=0) == A
    queue.add(A, why=GEN2)
    assert queue.trigger_of(A) == CREATED, "the running key keeps the trigger it was taken with"
    queue.done(A)
    why = taken(queue)
    assert why == GEN2, f"expected the follow-up to run for {GEN2}, saw {why}"


@pytest.mark.parametrize(
    ("why", "text"),
    [
        pytest.param(GEN2, "spec changed: generation 2", id="generation"),
        pytest.param(CHILD, "dependent changed: ConfigMap ns/c deleted", id="dependent"),
        pytest.param(trigger.OTHER, "enqueued", id="other"),
    ],
)
def test_describe(why: trigger.Trigger, text: str) -> None:
    assert why.describe() == text, f"expected {text!r}, saw {why.describe()!r}"


def test_the_runs_own_requeue_does_not_count_in_a_pending_follow_up() -> None:
    """An event while the key runs waits as its follow-up; the run then re-adds its
    reconcile period: that is no reason for the follow-up, so it is not counted."""
    queue = WorkQueue(clock=FakeClock())
    queue.add(A, why=CREATED)
    assert queue.get(timeout=0) == A
    queue.add(A, why=GEN2)
    queue.add_after(A, 600, why=RESYNC)
    queue.done(A)
    why = taken(queue)
    assert why == GEN2, f"expected {GEN2} with nothing folded in, saw {why}"
