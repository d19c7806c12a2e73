"""``run --dev`` on the embedded cluster: role and watches.yaml edits show without a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from testkit.harness import OperatorProcess
from tests.runner.support import PROBE, probe
from tests.tools.devloop.conftest import StartDev, wait_message, watches_yaml, write_role

pytestmark = pytest.mark.integration


def logged_with(operator: OperatorProcess, msg: str, **fields: Any) -> list[dict[str, Any]]:
    return [
        line
        for line in list(operator.lines)
        if line.get("msg") == msg and all(line.get(k) == v for k, v in fields.items())
    ]


def test_role_edit_reconciles_and_broken_edit_keeps_last_good_role(
    kube: Client, namespace: str, project: Path, start_dev: StartDev
) -> None:
    operator = start_dev()
    kube.create(PROBE, probe("a", namespace, {"word": "w1"}), namespace=namespace)
    wait_message(operator, kube, namespace, "a", "one-w1-")

    tasks = write_role(project, "two")
    wait_message(operator, kube, namespace, "a", "two-w1-")
    changed = logged_with(operator, "project file changed", file="roles/live/tasks/main.yml")
    assert changed, f"no log line naming the edited file; log tail:\n{operator.tail()}"

    # A broken edit: reported with file and line, and runs keep using the last good role.
    tasks.write_text(tasks.read_text() + "- name: broken\n  debug: msg: oops\n")
    problems = operator.eventually(
        lambda: logged_with(
            operator,
            "edit not applied: the last good version keeps running",
            file="roles/live/tasks/main.yml",
        ),
        describe="the YAML error of roles/live/tasks/main.yml logged",
    )
    assert problems[0].get("line") == 14, f"expected the error at line 14, saw {problems[0]}"
    kube.patch(PROBE, name="a", namespace=namespace, body={"spec": {"word": "w2"}})
    wait_message(operator, kube, namespace, "a", "two-w2-")

    write_role(project, "three")  # fixed: the edit goes live
    wait_message(operator, kube, namespace, "a", "three-w2-")


def test_watches_edit_reloads_in_place(
    kube: Client, namespace: str, project: Path, start_dev: StartDev
) -> None:
    operator = start_dev()
    kube.create(PROBE, probe("b", namespace, {"word": "x"}), namespace=namespace)
    wait_message(operator, kube, namespace, "b", "one-x-")

    (project / "watches.yaml").write_text(watches_yaml("  vars:\n    greeting: hello\n"))
    wait_message(operator, kube, namespace, "b", "one-x-hello")
    assert logged_with(operator, "watches reloaded", file="watches.yaml"), operator.tail()

    # Another role for the same kind, in place too.
    write_role(project, "other", role="second")
    (project / "watches.yaml").write_text(watches_yaml(role="second"))
    wait_message(operator, kube, namespace, "b", "other-x-")
    assert len(logged_with(operator, "started")) == 1, "the runner restarted for an in-place edit"


def test_watches_edit_of_event_filters_restarts_the_runner(
    kube: Client, namespace: str, project: Path, start_dev: StartDev
) -> None:
    operator = start_dev()
    kube.create(PROBE, probe("c", namespace, {"word": "y"}), namespace=namespace)
    wait_message(operator, kube, namespace, "c", "one-y-")

    selector = "  selector:\n    matchLabels:\n      pick: 'yes'\n"
    (project / "watches.yaml").write_text(watches_yaml(selector))
    operator.eventually(
        lambda: len(logged_with(operator, "started")),
        until=lambda n: n == 2,
        describe="the runner to start again after the selector changed",
    )
    kube.create(
        PROBE, probe("d", namespace, {"word": "z"}, labels={"pick": "yes"}), namespace=namespace
    )
    wait_message(operator, kube, namespace, "d", "one-z-")


def test_invalid_watches_edit_keeps_the_running_watches(
    kube: Client, namespace: str, project: Path, start_dev: StartDev
) -> None:
    operator = start_dev()
    kube.create(PROBE, probe("e", namespace, {"word": "v"}), namespace=namespace)
    wait_message(operator, kube, namespace, "e", "one-v-")

    (project / "watches.yaml").write_text(watches_yaml(role="missing"))
    refused = operator.eventually(
        lambda: logged_with(
            operator, "edit not applied: the last good version keeps running", file="watches.yaml"
        ),
        describe="the invalid watches.yaml reported",
    )
    assert "role 'missing' not found" in str(refused[0].get("error")), refused[0]
    kube.patch(PROBE, name="e", namespace=namespace, body={"spec": {"word": "v2"}})
    wait_message(operator, kube, namespace, "e", "one-v2-")

    (project / "watches.yaml").write_text(watches_yaml())  # fixed again: edits go live
    write_role(project, "four")
    wait_message(operator, kube, namespace, "e", "four-v2-")
