"""kstatus' conditions at each phase of a CR's runs, with observedGeneration, on top of
operator-sdk's (which stay as test_transitions.py pins them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runner.status import conditions, kstatus
from runner.status.conditions import Condition

T0 = datetime(2024, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)
OLD = "2024-01-01T00:00:00Z"
NEW = "2024-01-01T00:05:00Z"


def by_type(found: list[Condition]) -> dict[str, Condition]:
    return {c["type"]: c for c in found}


def brief(found: list[Condition], kind: str) -> tuple[str, str, object] | None:
    c = by_type(found).get(kind)
    return (c["status"], c["reason"], c.get("observedGeneration")) if c else None


def reconciled(generation: int) -> list[Condition]:
    """A CR whose run for ``generation`` succeeded, stamped OLD."""
    started = kstatus.running([], generation=generation, now=T0)
    return kstatus.succeeded(started, generation=generation, now=T0)


def test_a_new_generation_is_reconciling_until_its_run_ends() -> None:
    running = kstatus.running(reconciled(1), generation=2, now=LATER)
    assert brief(running, "Reconciling") == ("True", "Running", 2), running
    assert brief(running, "Ready") == ("False", "Reconciling", 2), running
    done = kstatus.succeeded(running, generation=2, now=LATER)
    assert brief(done, "Reconciling") == ("False", "Succeeded", 2), done
    assert brief(done, "Ready") == ("True", "Succeeded", 2), done


@pytest.mark.parametrize(
    "before",
    [
        pytest.param(reconciled(1), id="resync-of-a-reconciled-generation"),
        pytest.param(
            kstatus.failed(
                reconciled(1),
                generation=1,
                message="m",
                stalled=kstatus.REASON_BACKOFF_CAPPED,
                retry="r",
                now=T0,
            ),
            id="retry-of-a-stalled-generation",
        ),
    ],
)
def test_a_run_of_an_ended_generation_changes_nothing(before: list[Condition]) -> None:
    assert kstatus.running(before, generation=1, now=LATER) == before, (
        "expected a resync (or a stalled CR's retry) to leave kstatus' conditions alone"
    )
    assert kstatus.waiting(before, generation=1, now=LATER) == before


def test_a_failure_is_pending_then_stalled_with_the_tasks_message() -> None:
    running = kstatus.running([], generation=3, now=T0)
    failed = kstatus.failed(
        running, generation=3, message="Break: broken", stalled=None, retry="retry in 1s", now=T0
    )
    assert brief(failed, "Reconciling") == ("True", "Pending", 3), failed
    assert brief(failed, "Ready") == ("False", "Failed", 3), failed
    assert "Stalled" not in by_type(failed), failed
    stalled = kstatus.failed(
        failed, generation=3, message="Break: broken", stalled="BackoffCapped", retry="r", now=T0
    )
    assert brief(stalled, "Stalled") == ("True", "BackoffCapped", 3), stalled
    assert by_type(stalled)["Stalled"]["message"] == "Break: broken", stalled
    assert brief(stalled, "Reconciling") == ("False", "Stalled", 3), stalled


def test_a_new_generation_clears_stalled() -> None:
    stalled = kstatus.failed(
        [], generation=1, message="m", stalled=kstatus.REASON_INVALID, retry="r", now=T0
    )
    running = kstatus.running(stalled, generation=2, now=LATER)
    assert brief(running, "Stalled") == ("False", "Reconciling", 2), running
    assert brief(running, "Reconciling") == ("True", "Running", 2), running


def test_the_roles_own_ready_survives_a_success_but_not_a_failure() -> None:
    running = kstatus.running([], generation=1, now=T0)
    role = {"type": "Ready", "status": "False", "reason": "NoPodsAvailable", "message": "0/3"}
    written = [c for c in running if c["type"] != "Ready"] + [role]
    done = kstatus.succeeded(written, generation=1, now=T0)
    assert by_type(done)["Ready"] == role, f"expected the role's Ready kept, saw {done}"
    failed = kstatus.failed(written, generation=1, message="m", stalled=None, retry="r", now=T0)
    assert brief(failed, "Ready") == ("False", "Failed", 1), failed


def test_last_transition_time_moves_only_with_the_status() -> None:
    first = kstatus.running([], generation=1, now=T0)
    failed = kstatus.failed(first, generation=1, message="m", stalled=None, retry="r", now=LATER)
    # Reconciling True → True (Running → Pending), Ready False → False: no transition.
    assert by_type(failed)["Reconciling"]["lastTransitionTime"] == OLD, failed
    assert by_type(failed)["Ready"]["lastTransitionTime"] == OLD, failed
    done = kstatus.succeeded(failed, generation=1, now=LATER)
    assert by_type(done)["Reconciling"]["lastTransitionTime"] == NEW, done
    assert by_type(done)["Ready"]["lastTransitionTime"] == NEW, done


def test_a_slot_wait_becomes_running_without_a_transition() -> None:
    waiting = kstatus.waiting([], generation=1, now=T0)
    assert brief(waiting, "Reconciling") == ("True", "WaitingForSlot", 1), waiting
    started = conditions.mark_running(kstatus.running(waiting, generation=1, now=LATER), now=LATER)
    assert brief(started, "Reconciling") == ("True", "Running", 1), started
    assert by_type(started)["Reconciling"]["lastTransitionTime"] == OLD, started


def test_without_kstatus_the_slot_wait_still_goes_with_running() -> None:
    waiting = conditions.mark_waiting([], now=T0)
    started = conditions.mark_running(waiting, now=LATER)
    assert "Reconciling" not in by_type(started), f"expected the wait gone, saw {started}"
