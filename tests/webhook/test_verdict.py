"""What a finished webhook run means: allowed, denied, patched, or the failure policy."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from runner.ansible import launch
from runner.ansible.events import FailedTask
from runner.base import logs
from runner.config import admission
from runner.kube.types import GVK
from runner.webhook import hooks, review

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
OBJ: dict[str, Any] = {"kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}}
REQUEST = review.Request(
    uid="u",
    operation="CREATE",
    obj=OBJ,
    old=None,
    user_info={},
    dry_run=False,
    namespace="ns",
    name="g",
)
LOG = logs.bind(logging.getLogger("test"), test=True)


def _hook(kind: admission.Kind, policy: admission.FailurePolicy) -> admission.Hook:
    return admission.Hook(
        kind=kind,
        gvk=GADGET,
        role=None,
        playbook=Path("p.yml"),
        vars={},
        timeout_seconds=3,
        failure_policy=policy,
    )


def _result(
    *, failed: tuple[FailedTask, ...] = (), status: str = "successful", stats_missing: bool = False
) -> launch.RunResult:
    return launch.RunResult(
        ok=1,
        changed=0,
        skipped=0,
        failures=len(failed),
        completion="",
        failed=bool(failed),
        failed_tasks=failed,
        requeue_after=None,
        stats_missing=stats_missing,
        duration=0.1,
        artifact_dir=Path("."),
        status=status,
        rc=0,
        output_tail="",
    )


FAIL, IGNORE = admission.FailurePolicy.FAIL, admission.FailurePolicy.IGNORE
VALIDATE, MUTATE = admission.Kind.VALIDATION, admission.Kind.MUTATION
TASK = FailedTask(task="Check the size", role="r", message="size too big")
HUNG = FailedTask(task="Hang", role="r", message="the Ansible run timed out after 2.5s")
PARSE = FailedTask(task="ansible-playbook", role=None, message="ERROR! no such module")


@pytest.mark.parametrize(
    ("hook", "result", "answers", "expected"),
    [
        pytest.param(
            _hook(VALIDATE, FAIL),
            _result(),
            [{"warnings": ["w1"]}],
            review.Verdict(allowed=True, warnings=("w1",)),
            id="allowed-with-warnings",
        ),
        pytest.param(
            _hook(VALIDATE, IGNORE),
            _result(failed=(TASK,)),
            [],
            review.Verdict(allowed=False, code=403, message="size too big"),
            id="denied-by-a-task-whatever-the-policy",
        ),
        pytest.param(
            _hook(VALIDATE, FAIL),
            _result(failed=(HUNG,), status=launch.TIMEOUT, stats_missing=True),
            [],
            review.Verdict(
                allowed=False, code=500, message="webhook role timed out after 3s in task 'Hang'"
            ),
            id="timeout-under-fail",
        ),
        pytest.param(
            _hook(VALIDATE, IGNORE),
            _result(failed=(HUNG,), status=launch.TIMEOUT, stats_missing=True),
            [],
            review.Verdict(
                allowed=True,
                warnings=("webhook role timed out after 3s in task 'Hang' (failurePolicy Ignore)",),
            ),
            id="timeout-under-ignore",
        ),
        pytest.param(
            _hook(VALIDATE, FAIL),
            _result(failed=(PARSE,), status="failed", stats_missing=True),
            [],
            review.Verdict(
                allowed=False, code=500, message="webhook role could not run: ERROR! no such module"
            ),
            id="does-not-parse",
        ),
        pytest.param(
            _hook(MUTATE, FAIL),
            _result(),
            [
                {"object": {**OBJ, "spec": {"size": 9}}},
                {"object": {**OBJ, "spec": {"size": 2}}, "warnings": ["w"]},
            ],
            review.Verdict(
                allowed=True,
                patch=[{"op": "replace", "path": "/spec/size", "value": 2}],
                warnings=("w",),
            ),
            id="mutation-the-last-object-wins",
        ),
        pytest.param(
            _hook(MUTATE, FAIL),
            _result(),
            [{"patch": [{"op": "add", "path": "/spec/x", "value": 1}]}],
            review.Verdict(allowed=True, patch=[{"op": "add", "path": "/spec/x", "value": 1}]),
            id="mutation-by-patch",
        ),
        pytest.param(
            _hook(VALIDATE, FAIL),
            _result(),
            [{"object": {**OBJ, "spec": {"size": 2}}}],
            review.Verdict(allowed=True),
            id="a-validation-never-patches",
        ),
        pytest.param(
            _hook(MUTATE, FAIL),
            _result(),
            [{"object": OBJ}],
            review.Verdict(allowed=True),
            id="an-unchanged-object-is-no-patch",
        ),
    ],
)
def test_verdict(
    hook: admission.Hook,
    result: launch.RunResult,
    answers: list[dict[str, Any]],
    expected: review.Verdict,
) -> None:
    seen = hooks.verdict(hook, request=REQUEST, result=result, answers=answers, log=LOG)
    assert seen == expected, f"expected {expected}, saw {seen}"
