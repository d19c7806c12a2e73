"""When a CR is Stalled: a permanent failure at once, else once the backoff reaches its cap."""

from __future__ import annotations

import pytest

from runner.ansible.events import FailedTask
from runner.reconcile import readiness
from runner.status import kstatus


def task(action: str) -> FailedTask:
    return FailedTask(task="t", role="r", message="m", action=action)


@pytest.mark.parametrize(
    ("failed", "permanent"),
    [
        pytest.param([task("ansible.builtin.assert")], True, id="assert"),
        pytest.param([task("assert"), task("ansible.legacy.assert")], True, id="all-asserts"),
        pytest.param([task("assert"), task("kubernetes.core.k8s")], False, id="assert-and-api"),
        pytest.param([task("ansible.builtin.fail")], False, id="fail-may-be-transient"),
        pytest.param([], False, id="no-task-named"),
    ],
)
def test_only_refused_input_is_permanent(failed: list[FailedTask], permanent: bool) -> None:
    assert readiness.permanent(failed) is permanent, f"expected permanent={permanent}"


def test_stalled_once_the_backoff_reaches_its_cap() -> None:
    failures = readiness.Failures(base=0.5, cap=4.0)
    verdicts = [
        readiness.verdict(failures, uid="u", generation=1, failed=[task("k8s")])[0]
        for _ in range(5)
    ]
    # Delays 0.5, 1, 2, 4 (the cap), 4: stalled from the fourth failure on.
    expected = [None, None, None, kstatus.REASON_BACKOFF_CAPPED, kstatus.REASON_BACKOFF_CAPPED]
    assert verdicts == expected, f"expected {expected}, saw {verdicts}"


def test_a_new_generation_or_a_success_counts_again_from_one() -> None:
    failures = readiness.Failures(base=1.0, cap=2.0)
    assert failures.failed("u", generation=1) == (1, 1.0)
    assert failures.failed("u", generation=1) == (2, 2.0)
    assert failures.failed("u", generation=2) == (1, 1.0), "a new generation starts over"
    failures.succeeded("u")
    assert failures.failed("u", generation=2) == (1, 1.0), "a success starts over"


def test_an_assert_stalls_at_the_first_failure() -> None:
    failures = readiness.Failures(base=1.0, cap=300.0)
    reason, retry = readiness.verdict(
        failures, uid="u", generation=3, failed=[task("ansible.builtin.assert")]
    )
    assert reason == kstatus.REASON_INVALID, f"expected Invalid, saw {reason}"
    assert "retrying in 1s" in retry, retry
