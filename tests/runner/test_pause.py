"""Pausing one CR with the playbook-operator.io/paused annotation, on the embedded cluster:
no run while paused (a Paused condition says so), a run once resumed, and deletion with
its finalizer still working while paused."""

from __future__ import annotations

import pytest

from runner.config import cr_annotations
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for
from tests.runner.support import (
    PROBE,
    StartOperator,
    condition,
    probe,
    probe_watches,
    wait_condition,
)

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")
PAUSED = {cr_annotations.PAUSED_ANNOTATION: "true"}


def count(operator: OperatorProcess, msg: str, name: str) -> int:
    return sum(
        1 for line in list(operator.lines) if line.get("msg") == msg and line.get("name") == name
    )


def test_a_paused_cr_does_not_run_until_resumed(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    body = probe("held", namespace, {"message": "one"})
    body["metadata"]["annotations"] = dict(PAUSED)
    kube.create(PROBE, body, namespace=namespace)

    def paused_condition() -> dict[str, object] | None:
        return condition(kube.get(PROBE, name="held", namespace=namespace), "Paused")

    cond = operator.eventually(
        paused_condition,
        until=lambda c: bool(c and c.get("status") == "True"),
        describe="Paused=True on the paused CR",
    )
    assert cond and cond.get("reason") == "Paused", f"expected reason Paused, saw {cond}"

    # A spec change while paused: reconciled (logged) but not run.
    kube.patch(PROBE, name="held", namespace=namespace, body={"spec": {"message": "two"}})
    operator.eventually(
        lambda: count(operator, "paused; not reconciling", "held") >= 2,
        describe="the spec change to reach the paused CR's reconcile",
    )
    ran = count(operator, "Ansible-runner exited successfully", "held")
    assert ran == 0, f"expected no run while paused, saw {ran}:\n{operator.tail()}"

    # Removing the annotation resumes, with no watchAnnotationsChanges needed.
    kube.patch(
        PROBE,
        name="held",
        namespace=namespace,
        body={"metadata": {"annotations": {cr_annotations.PAUSED_ANNOTATION: None}}},
    )
    done = wait_condition(
        kube, namespace=namespace, name="held", kind="Successful", status="True", operator=operator
    )
    resumed = condition(done, "Paused")
    assert resumed and resumed.get("status") == "False", f"expected Paused=False, saw {resumed}"
    echo = kube.get(CONFIGMAP, name="held-echo", namespace=namespace)
    assert echo["data"] == {"message": "two"}, f"expected the resumed run's data: {echo['data']}"


def test_deleting_a_paused_cr_runs_its_finalizer(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    extra = """  finalizer:
    name: tests.playbook-operator.dev/cleanup
    vars:
      finalizing: true"""
    # Owner injection off: the finalizer's record must outlive the CR.
    operator = start_operator(probe_watches(extra), args=("--inject-owner-ref=false",))
    kube.create(PROBE, probe("bye", namespace, {"message": "m"}), namespace=namespace)
    wait_condition(
        kube, namespace=namespace, name="bye", kind="Successful", status="True", operator=operator
    )
    kube.patch(PROBE, name="bye", namespace=namespace, body={"metadata": {"annotations": PAUSED}})
    operator.eventually(
        lambda: condition(kube.get(PROBE, name="bye", namespace=namespace), "Paused"),
        until=lambda c: bool(c and c.get("status") == "True"),
        describe="Paused=True after the annotation",
    )

    kube.delete(PROBE, name="bye", namespace=namespace)

    def gone() -> bool:
        try:
            kube.get(PROBE, name="bye", namespace=namespace)
        except kube_errors.NotFoundError:
            return True
        return False

    wait_for(gone, timeout=90, describe="the paused CR deleted once its finalizer ran")
    record = kube.get(CONFIGMAP, name="bye-finalized", namespace=namespace)
    assert record["data"] == {"finalized": "true"}, record["data"]
