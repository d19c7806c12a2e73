"""The conditions operator-sdk writes at each reconcile phase, field for field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from runner.status import conditions
from runner.status.conditions import AnsibleResult, Condition

T0 = datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=5)
OLD = "2024-01-01T00:00:00Z"
NEW = "2024-01-01T00:05:00Z"

RESULT = AnsibleResult(ok=4, changed=1, skipped=2, failures=0, completion="2024-01-01T00:04:59Z")
FAILED = AnsibleResult(ok=2, changed=0, skipped=0, failures=1, completion="2024-01-01T00:04:58Z")
PREVIOUS = AnsibleResult(ok=1, changed=1, skipped=0, failures=0, completion="2023-12-31T23:59:59Z")


def cond(kind: str, state: str, reason: str, message: str, ltt: str, **extra: Any) -> Condition:
    return {
        "type": kind,
        "status": state,
        "lastTransitionTime": ltt,
        "reason": reason,
        "message": message,
        **extra,
    }


def result(r: AnsibleResult) -> dict[str, Any]:
    return {"ansibleResult": r.to_dict()}


# States a CR is left in by operator-sdk, all stamped OLD.
AFTER_SUCCESS = [
    cond("Running", "True", "Successful", "Awaiting next reconciliation", OLD, **result(PREVIOUS)),
    cond("Successful", "True", "Successful", "Last reconciliation succeeded", OLD),
    cond("Failure", "False", "", "", OLD),
]
AFTER_FAILURE = [
    cond("Running", "False", "Running", "Running reconciliation", OLD),
    cond("Failure", "True", "Failed", "old failure", OLD, **result(FAILED)),
    cond("Successful", "False", "", "", OLD),
]
RUNNING_AFTER_SUCCESS = [
    cond("Failure", "False", "", "", OLD),
    cond("Successful", "False", "Successful", "Last reconciliation succeeded", OLD),
    cond("Running", "True", "Running", "Running reconciliation", OLD),
]
RUNNING_AFTER_FAILURE = [
    cond("Failure", "True", "Failed", "old failure", OLD, **result(FAILED)),
    cond("Successful", "False", "", "", OLD),
    cond("Running", "True", "Running", "Running reconciliation", OLD),
]
CUSTOM = cond("Ready", "True", "Deployed", "role-written", OLD, observedGeneration=3)

Transition = Callable[[list[Condition]], list[Condition]]


def running(c: list[Condition]) -> list[Condition]:
    return conditions.mark_running(c, now=NOW)


def successful(c: list[Condition]) -> list[Condition]:
    return conditions.mark_successful(c, result=RESULT, now=NOW)


def failed(c: list[Condition]) -> list[Condition]:
    return conditions.mark_failed(c, result=FAILED, message="task A failed\ntask B failed", now=NOW)


def error(c: list[Condition]) -> list[Condition]:
    return conditions.mark_error(c, message="Unable to run reconciliation", now=NOW)


CASES = [
    # -- mark_running --------------------------------------------------------
    pytest.param(
        running,
        [],
        [cond("Running", "True", "Running", "Running reconciliation", NEW)],
        id="running-first-reconcile",
    ),
    pytest.param(
        running,
        AFTER_SUCCESS,
        [
            cond("Failure", "False", "", "", OLD),
            # the transient operator-sdk #5235 complains about: reason/message kept
            cond("Successful", "False", "Successful", "Last reconciliation succeeded", NEW),
            # status stays True, so the old transition time stays; ansibleResult goes
            cond("Running", "True", "Running", "Running reconciliation", OLD),
        ],
        id="running-after-success",
    ),
    pytest.param(
        running,
        AFTER_FAILURE,
        [
            cond("Failure", "True", "Failed", "old failure", OLD, **result(FAILED)),
            cond("Successful", "False", "", "", OLD),
            cond("Running", "True", "Running", "Running reconciliation", NEW),
        ],
        id="running-after-failure-leaves-failure",
    ),
    pytest.param(running, RUNNING_AFTER_SUCCESS, RUNNING_AFTER_SUCCESS, id="running-is-idempotent"),
    # -- mark_successful -----------------------------------------------------
    pytest.param(
        successful,
        RUNNING_AFTER_SUCCESS,
        [
            cond(
                "Running",
                "True",
                "Successful",
                "Awaiting next reconciliation",
                OLD,
                **result(RESULT),
            ),
            cond("Successful", "True", "Successful", "Last reconciliation succeeded", NEW),
            cond("Failure", "False", "", "", OLD),
        ],
        id="successful-after-success",
    ),
    pytest.param(
        successful,
        RUNNING_AFTER_FAILURE,
        [
            cond(
                "Running",
                "True",
                "Successful",
                "Awaiting next reconciliation",
                OLD,
                **result(RESULT),
            ),
            cond("Successful", "True", "Successful", "Last reconciliation succeeded", NEW),
            cond("Failure", "False", "", "", NEW),
        ],
        id="successful-clears-failure",
    ),
    pytest.param(
        successful,
        [],
        [
            cond(
                "Running",
                "True",
                "Successful",
                "Awaiting next reconciliation",
                NEW,
                **result(RESULT),
            ),
            cond("Successful", "True", "Successful", "Last reconciliation succeeded", NEW),
            cond("Failure", "False", "", "", NEW),
        ],
        id="successful-from-nothing",
    ),
    # -- mark_failed ---------------------------------------------------------
    pytest.param(
        failed,
        RUNNING_AFTER_SUCCESS,
        [
            cond("Running", "False", "Running", "Running reconciliation", NEW),
            cond(
                "Failure", "True", "Failed", "task A failed\ntask B failed", NEW, **result(FAILED)
            ),
            cond("Successful", "False", "", "", OLD),
        ],
        id="failed-after-success",
    ),
    pytest.param(
        failed,
        RUNNING_AFTER_FAILURE,
        [
            cond("Successful", "False", "", "", OLD),
            cond("Running", "False", "Running", "Running reconciliation", NEW),
            # Failure is always rewritten: new message and result, old transition time
            cond(
                "Failure", "True", "Failed", "task A failed\ntask B failed", OLD, **result(FAILED)
            ),
        ],
        id="failed-again-rewrites-failure",
    ),
    pytest.param(
        lambda c: conditions.mark_failed(c, result=FAILED, message="", now=NOW),
        [],
        [
            cond("Failure", "True", "Failed", "unknown playbook failure", NEW, **result(FAILED)),
            cond("Successful", "False", "", "", NEW),
        ],
        id="failed-blank-message-gets-default",
    ),
    # -- mark_error ----------------------------------------------------------
    pytest.param(
        error,
        RUNNING_AFTER_SUCCESS,
        [
            cond("Successful", "False", "Successful", "Last reconciliation succeeded", OLD),
            cond("Running", "False", "Running", "Running reconciliation", NEW),
            cond("Failure", "True", "Failed", "Unable to run reconciliation", NEW),
        ],
        id="error-during-run",
    ),
    pytest.param(
        error,
        AFTER_SUCCESS,
        [
            cond(
                "Running",
                "False",
                "Successful",
                "Awaiting next reconciliation",
                NEW,
                **result(PREVIOUS),
            ),
            cond("Successful", "False", "Successful", "Last reconciliation succeeded", NEW),
            cond("Failure", "True", "Failed", "Unable to run reconciliation", NEW),
        ],
        id="error-before-run",
    ),
    pytest.param(
        error,
        [],
        [cond("Failure", "True", "Failed", "Unable to run reconciliation", NEW)],
        id="error-from-nothing",
    ),
]


@pytest.mark.parametrize(("transition", "before", "expected"), CASES)
def test_transition(
    transition: Transition, before: list[Condition], expected: list[Condition]
) -> None:
    assert transition(copy.deepcopy(before)) == expected


@pytest.mark.parametrize(("transition", "before", "expected"), CASES)
def test_custom_conditions_are_kept_in_place(
    transition: Transition, before: list[Condition], expected: list[Condition]
) -> None:
    assert transition([copy.deepcopy(CUSTOM), *copy.deepcopy(before)]) == [CUSTOM, *expected]


@pytest.mark.parametrize(
    "transition",
    [
        pytest.param(running, id="running"),
        pytest.param(successful, id="successful"),
        pytest.param(failed, id="failed"),
        pytest.param(error, id="error"),
    ],
)
def test_input_is_never_mutated_or_shared(transition: Transition) -> None:
    before = copy.deepcopy([CUSTOM, *AFTER_SUCCESS])
    snapshot = copy.deepcopy(before)
    after = transition(before)
    assert before == snapshot, "the transition mutated its input"
    for condition in after:
        condition["message"] = "scribbled"
        condition.get("ansibleResult", {})["ok"] = -1
    assert before == snapshot, "the output shares objects with the input"


def test_full_reconcile_sequence() -> None:
    """What a watcher sees over success, then a failing run, then recovery."""
    steps: list[Transition] = [running, successful, running, failed, running, successful]
    seen: list[dict[str, tuple[str, str]]] = []
    conditions: list[Condition] = []
    for step in steps:
        conditions = step(conditions)
        seen.append({c["type"]: (c["status"], c["reason"]) for c in conditions})
    assert seen == [
        {"Running": ("True", "Running")},
        {
            "Running": ("True", "Successful"),
            "Successful": ("True", "Successful"),
            "Failure": ("False", ""),
        },
        {
            "Running": ("True", "Running"),
            "Successful": ("False", "Successful"),
            "Failure": ("False", ""),
        },
        {
            "Running": ("False", "Running"),
            "Successful": ("False", ""),
            "Failure": ("True", "Failed"),
        },
        {
            "Running": ("True", "Running"),
            "Successful": ("False", ""),
            "Failure": ("True", "Failed"),
        },
        {
            "Running": ("True", "Successful"),
            "Successful": ("True", "Successful"),
            "Failure": ("False", ""),
        },
    ]


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        pytest.param(
            datetime(2024, 3, 4, 5, 6, 7, 891011, tzinfo=UTC), "2024-03-04T05:06:07Z", id="utc"
        ),
        pytest.param(
            datetime(2024, 3, 4, 7, 6, 7, tzinfo=timezone(timedelta(hours=2))),
            "2024-03-04T05:06:07Z",
            id="offset",
        ),
        pytest.param(datetime(2024, 3, 4, 5, 6, 7), "2024-03-04T05:06:07Z", id="naive-is-utc"),
    ],
)
def test_rfc3339(moment: datetime, expected: str) -> None:
    assert conditions.rfc3339(moment) == expected


def test_ansible_result_uses_operator_sdk_keys() -> None:
    assert RESULT.to_dict() == {
        "ok": 4,
        "changed": 1,
        "skipped": 2,
        "failures": 0,
        "completion": "2024-01-01T00:04:59Z",
    }
