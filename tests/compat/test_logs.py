"""The log lines and printed blocks ansible-operator users grep and alert on.

After each run: ``Ansible-runner exited successfully``, or an error line whose
``error`` is ansible-runner's exit status (operator-sdk's internal/ansible/runner)
and whose message holds the failed tasks' messages and the PLAY RECAP (not Ansible's
whole output, which may hold what a role read); then on standard output the PLAY RECAP
block, and with ``ANSIBLE_DEBUG_LOGS`` the whole output (controller/reconcile.go).
Errors the API server answers while a just-created kind gets ready are retried
quietly.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runner.kube import client, errors
from runner.kube.types import GVK, Resource
from runner.watch import source
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name, wait_for
from tests.compat.conftest import CRD, Start, logged_lines
from tests.runner.support import PROBE, probe, probe_watches, wait_condition

SUCCESS = "Ansible-runner exited successfully"


def block(proc: OperatorProcess, title: str) -> str:
    """The printed block whose header starts with ``title`` ("" if none yet)."""
    lines = list(proc.raw)
    for index, line in enumerate(lines):
        if line.startswith("----- ") and title in line:
            body: list[str] = []
            for rest in lines[index + 1 :]:
                if rest == "----------":
                    return "\n".join(body).strip()
                body.append(rest)
    return ""


def test_a_successful_run_logs_ansible_operators_line_and_its_play_recap(
    kube: client.Client, namespace: str, operators: Start
) -> None:
    operator = operators(probe_watches())
    kube.create(PROBE, probe("ok", namespace, {}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="ok", kind="Successful", status="True")

    lines = operator.eventually(
        lambda: logged_lines(operator, SUCCESS), describe=f"a line {SUCCESS!r}"
    )
    assert (lines[0].get("name"), lines[0].get("namespace")) == ("ok", namespace), lines[0]
    title = f"Ansible Task Status Event StdOut ({PROBE}, ok/{namespace})"
    recap = operator.eventually(lambda: block(operator, title), describe=f"a block {title!r}")
    assert recap.startswith("PLAY RECAP") and "localhost" in recap and "failed=0" in recap, (
        f"expected the PLAY RECAP in the block, saw:\n{recap}"
    )
    assert not block(operator, "Ansible Debug Result"), (
        "the whole output is printed only with ANSIBLE_DEBUG_LOGS"
    )


@pytest.mark.parametrize(
    "value", [pytest.param("true", id="true"), pytest.param("TRUE", id="molecule-TRUE")]
)
def test_ansible_debug_logs_print_each_runs_whole_output(
    kube: client.Client, namespace: str, operators: Start, value: str
) -> None:
    operator = operators(probe_watches(), env={"ANSIBLE_DEBUG_LOGS": value})
    kube.create(PROBE, probe("dbg", namespace, {"message": "hi"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="dbg", kind="Successful", status="True")

    title = f"Ansible Debug Result ({PROBE}, dbg/{namespace})"
    output = operator.eventually(lambda: block(operator, title), describe=f"a block {title!r}")
    for expected in ("TASK [probe : Write the echo ConfigMap]", "PLAY RECAP", "ok=", "failed=0"):
        assert expected in output, f"expected {expected!r} in the printed output:\n{output}"


def test_a_failed_run_logs_the_exit_status_failed_tasks_and_recap(
    kube: client.Client, namespace: str, operators: Start
) -> None:
    operator = operators(probe_watches())
    spec = {"message": "boom", "should_fail": True}
    kube.create(PROBE, probe("bad", namespace, spec), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="bad", kind="Failure", status="True")

    def failure_lines() -> list[dict[str, object]]:
        return [
            line
            for line in list(operator.lines)
            if line.get("level") == "error" and line.get("error") == "exit status 2"
        ]

    lines = operator.eventually(failure_lines, describe="an error line with 'exit status 2'")
    text = str(lines[0]["msg"])
    assert "asked to fail with boom" in text and "PLAY RECAP" in text, (
        f"expected the failed task's message and the PLAY RECAP, saw:\n{text}"
    )
    assert not logged_lines(operator, SUCCESS), "a failed run is not 'exited successfully'"


# -- start-up ---------------------------------------------------------------


@pytest.fixture
def fresh_kind(kube: client.Client) -> Iterator[tuple[GVK, dict[str, Any]]]:
    """A CRD made for this test and not yet created: (its kind, its manifest)."""
    plural = unique_name("fresh", max_length=20).replace("-", "")
    gvk = GVK("compat.playbook-operator.dev", "v1", plural.capitalize())
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{gvk.group}"},
        "spec": {
            "group": gvk.group,
            "names": {"kind": gvk.kind, "plural": plural, "singular": plural},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    yield gvk, crd
    with contextlib.suppress(errors.NotFoundError):
        kube.delete(CRD, name=crd["metadata"]["name"])


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_just_created_kind_is_listed_without_warnings(
    kube: client.Client, fresh_kind: tuple[GVK, dict[str, Any]]
) -> None:
    """The first lists of a CRD created a moment ago are refused (404, then 429
    "storage is (re)initializing"); the informer retries them at debug level."""
    gvk, crd = fresh_kind
    records = Records()
    logger = logging.getLogger(f"tests.compat.{gvk.kind}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(records)
    resource = Resource(
        gvk=gvk,
        plural=crd["spec"]["names"]["plural"],
        namespaced=True,
        verbs=frozenset({"list", "watch"}),
        subresources=frozenset(),
    )
    informer = source.Informer(
        client=kube, resource=resource, namespace=None, handler=lambda event: None, log=logger
    )
    stop = threading.Event()
    # The informer first, then the CRD, as a runner started together with its CRD (make
    # install run) may see it: its first lists are refused, whatever the timing.
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(
        lambda: [r for r in records.records if r.getMessage() == "watch interrupted, reconnecting"],
        describe=f"the first list of {gvk.kind} refused before its CRD exists",
    )
    kube.create(CRD, crd)
    try:
        wait_for(informer.synced.is_set, describe=f"the informer of {gvk.kind} synced")
    finally:
        stop.set()  # the thread ends with its watch stream; it is a daemon meanwhile
        logger.removeHandler(records)
    retried = [r for r in records.records if r.getMessage() == "watch interrupted, reconnecting"]
    assert retried, (
        "expected the API server to refuse the first list of a CRD created a moment ago "
        "(404 or 429), so that the retry is exercised; it answered at once"
    )
    loud = [
        f"{r.levelname}: {r.getMessage()} {r.__dict__.get('error')}"
        for r in records.records
        # The one info line of a synced informer (what it holds) is not about the retries.
        if r.levelno > logging.DEBUG and r.getMessage() != "informer synced"
    ]
    assert not loud, f"expected only debug lines while the kind got ready, saw: {loud}"
