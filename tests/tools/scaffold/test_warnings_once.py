"""An Ansible warning shows once per runner process, not in every reconcile's log.

Every run is a new ansible-playbook, so Ansible prints its deprecation warnings in each.
The events are fed as ansible-runner hands them over (shapes taken from ansible-core 2.19
and 2.18 runs) to one Tally per run, with the runner's own log setup.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from runner.ansible import events
from runner.base import logs
from runner.config import sections

DEPRECATION = "Direct access to the `environment` attribute is deprecated."
STDOUT_219 = (
    "[WARNING]: Deprecation warnings can be disabled by setting `deprecation_warnings=False`"
    " in ansible.cfg.\n"
    f"[DEPRECATION WARNING]: {DEPRECATION} This feature will be removed in the future.\n"
    'changed: [localhost] => {"changed": true}'
)
# ansible-core 2.18 wraps a warning at the terminal's width.
STDOUT_218 = (
    "[DEPRECATION WARNING]: Direct access to the `environment` attribute is\n"
    "deprecated. This feature will be removed in version 2.23.\n"
    'changed: [localhost] => {"changed": true}'
)


def task_ok(stdout: str, res: dict[str, Any]) -> dict[str, Any]:
    return {
        "event": "runner_on_ok",
        "stdout": stdout,
        "event_data": {
            "host": "localhost",
            "task": "Apply the Deployment",
            "role": "memcached",
            "task_action": "kubernetes.core.k8s",
            "res": {"changed": True, **res},
        },
    }


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """What the runner's log setup (as `playbook-operator run` makes it) writes."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    # logr's V(2) (--zap-log-level=2): where a task's whole output ("ansible output") shows.
    logs.setup(fmt=logs.LogFormat.JSON, level=logging.DEBUG - 1)
    yield stream
    root.handlers[:] = handlers
    root.setLevel(level)


def lines_of(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def reconcile(event: dict[str, Any], *, name: str) -> None:
    log = logs.bind(logging.getLogger("runner.reconcile"), name=name)
    tally = events.Tally(log=log, level=sections.LogEvents.TASKS, verbosity=2)
    tally.handle(event)


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(
            task_ok(
                STDOUT_219,
                {"deprecations": [{"msg": DEPRECATION, "version": "2.23", "deprecator": {}}]},
            ),
            id="ansible-core-2.19",
        ),
        pytest.param(
            task_ok(STDOUT_218, {"deprecations": [{"msg": DEPRECATION, "version": "2.23"}]}),
            id="ansible-core-2.18",
        ),
        pytest.param(
            task_ok(
                "[WARNING]: a module warning\n" + "ok: [localhost] => {}",
                {"warnings": ["a module warning"]},
            ),
            id="plain-warning",
        ),
    ],
)
def test_a_warning_is_logged_once_however_many_runs_repeat_it(
    event: dict[str, Any], stderr: io.StringIO
) -> None:
    for number in range(3):
        reconcile(event, name=f"cr-{number}")
    lines = lines_of(stderr)
    warned = [line for line in lines if line["level"] == "warn"]
    assert len(warned) == 1, f"expected one warning line for three runs, saw {warned}"
    assert warned[0]["msg"].startswith("ansible") and warned[0]["warning"], f"saw {warned[0]}"
    assert "_once" not in warned[0], "the dedupe key is not a log field"
    outputs = [line["stdout"] for line in lines if line["msg"] == "ansible output"]
    assert len(outputs) == 3, f"expected each run's task output, saw {outputs}"
    repeated = [text for text in outputs if "WARNING" in text or "deprecated" in text]
    assert not repeated, f"expected the warning out of the task output, saw {repeated}"
    assert all(text.startswith(("changed:", "ok:")) for text in outputs), f"saw {outputs}"


def test_distinct_warnings_are_each_logged(stderr: io.StringIO) -> None:
    reconcile(task_ok("", {"warnings": ["first"]}), name="a")
    reconcile(task_ok("", {"warnings": ["second"], "deprecations": [{"msg": "first"}]}), name="b")
    lines = lines_of(stderr)
    warned = sorted((line["msg"], line["warning"]) for line in lines if line["level"] == "warn")
    assert warned == [
        ("ansible deprecation warning", "first"),
        ("ansible warning", "first"),
        ("ansible warning", "second"),
    ], f"saw {warned}"
