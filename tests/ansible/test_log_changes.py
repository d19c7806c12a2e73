"""A run reads in a few lines at ``make run``'s level (``--zap-devel``: debug, the
``Changes`` log events): the tasks that changed something, no task starts, no task's
whole result unless asked for (logr verbosity 2, or a raised Ansible verbosity)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from runner.ansible import events
from runner.base import logs
from runner.config import sections


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=1)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def task_events(task: str, *, changed: bool) -> list[dict[str, Any]]:
    data = {"task": task, "host": "localhost", "task_action": "kubernetes.core.k8s"}
    result = {**data, "res": {"changed": changed, "result": {"kind": "Deployment"}}}
    out = f"{'changed' if changed else 'ok'}: [localhost] => " + '{"result": "' + "x" * 5000 + '"}'
    return [
        {"event": "playbook_on_task_start", "event_data": data, "stdout": f"TASK [{task}]"},
        {"event": "runner_on_ok", "event_data": result, "stdout": out},
    ]


def logged(level: sections.LogEvents, *, threshold: int, verbosity: int = 2) -> list[str]:
    logger = logging.getLogger(f"tests.ansible.changes.{level.value}.{threshold}.{verbosity}")
    logger.propagate = False
    lines = Lines()
    logger.addHandler(lines)
    logger.setLevel(threshold)
    tally = events.Tally(log=logger, level=level, verbosity=verbosity)
    for ev in task_events("Apply the Deployment", changed=True) + task_events(
        "Read the pods", changed=False
    ):
        tally.handle(ev)
    return [f"{r.getMessage()}:{getattr(r, 'task', '')}" for r in lines.records]


def test_changes_at_debug_is_one_line_per_changed_task() -> None:
    lines = logged(sections.LogEvents.CHANGES, threshold=logging.DEBUG)
    assert lines == ["task changed:Apply the Deployment"], (
        f"expected only the changed task at debug level, saw {lines}"
    )


@pytest.mark.parametrize(
    ("threshold", "verbosity"),
    [
        pytest.param(logging.DEBUG - 1, 2, id="zap-log-level-2"),
        pytest.param(logging.INFO, 3, id="raised-ansible-verbosity"),
    ],
)
def test_whole_results_when_asked(threshold: int, verbosity: int) -> None:
    lines = logged(sections.LogEvents.CHANGES, threshold=threshold, verbosity=verbosity)
    outputs = {line for line in lines if line.startswith("ansible output")}
    want = {"ansible output:Apply the Deployment", "ansible output:Read the pods"}
    assert outputs == want, f"expected each task's result, saw {lines}"


def test_tasks_mode_keeps_ansible_operators_task_starts() -> None:
    lines = logged(sections.LogEvents.TASKS, threshold=logging.INFO)
    starts = ["[playbook task start]:Apply the Deployment", "[playbook task start]:Read the pods"]
    assert lines == starts, lines


def test_json_task_start_line_matches_ansible_operators() -> None:
    """ansible-operator's line: {"msg": "[playbook task start]", "name", "namespace",
    "gvk", "event_type", "job", "EventData.Name"} — so log queries built on it match."""
    logger = logging.getLogger("tests.ansible.changes.json")
    logger.propagate = False
    lines = Lines()
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    bound = logs.bind(
        logger,
        name="awx",
        namespace="awx",
        gvk="awx.ansible.com/v1beta1, Kind=AWX",
        job="8942871570929849432",
    )
    tally = events.Tally(log=bound, level=sections.LogEvents.TASKS, verbosity=0)
    tally.handle(task_events("installer : Verify imagePullSecrets", changed=False)[0])
    line = json.loads(logs.JsonFormatter().format(lines.records[0]))
    want = {
        "level": "info",
        "msg": "[playbook task start]",
        "name": "awx",
        "namespace": "awx",
        "gvk": "awx.ansible.com/v1beta1, Kind=AWX",
        "event_type": "playbook_on_task_start",
        "job": "8942871570929849432",
        "EventData.Name": "installer : Verify imagePullSecrets",
    }
    seen = {key: line.get(key) for key in want}
    assert seen == want, f"expected ansible-operator's fields {want}, saw {line}"
