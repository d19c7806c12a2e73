"""The reconcile loop end to end: a real operator process, the embedded cluster, tiny roles."""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
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


def echo(kube: Client, namespace: str, name: str) -> str | None:
    try:
        return str(kube.get(CONFIGMAP, name=f"{name}-echo", namespace=namespace)["data"]["message"])
    except Exception:
        return None


def test_create_then_spec_change_reconciles(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("a", namespace, {"message": "first"}), namespace=namespace)

    done = wait_condition(kube, namespace=namespace, name="a", kind="Successful", status="True")
    running = condition(done, "Running")
    assert running is not None and running["reason"] == "Successful", (
        f"Running condition: {running}"
    )
    assert running["ansibleResult"]["failures"] == 0, running
    assert echo(kube, namespace, "a") == "first"

    kube.patch(PROBE, name="a", namespace=namespace, body={"spec": {"message": "second"}})
    operator.eventually(
        lambda: echo(kube, namespace, "a"), until=lambda v: v == "second", describe="echo 'second'"
    )
    wait_condition(kube, namespace=namespace, name="a", kind="Successful", status="True")
    assert operator.runs() == 2, (
        f"expected 2 runs (create, spec change), saw {operator.runs()}; "
        f"triggers:\n{operator.triggers()}"
    )


def test_status_only_update_does_not_run(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("s", namespace, {"message": "x"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="s", kind="Successful", status="True")
    before = operator.runs()

    kube.patch(
        PROBE,
        name="s",
        namespace=namespace,
        subresource="status",
        body={"status": {"note": "by hand"}},
    )
    kube.patch(
        PROBE, name="s", namespace=namespace, body={"metadata": {"labels": {"touched": "yes"}}}
    )
    # A spec change afterwards is the marker: once it is reconciled, the earlier
    # status/label updates would have run before it if they had been queued.
    kube.patch(PROBE, name="s", namespace=namespace, body={"spec": {"message": "y"}})
    operator.eventually(
        lambda: echo(kube, namespace, "s"), until=lambda v: v == "y", describe="echo 'y'"
    )
    wait_condition(kube, namespace=namespace, name="s", kind="Successful", status="True")
    assert operator.runs() == before + 1, (
        f"expected exactly one more run, saw {operator.runs() - before}; "
        f"triggers:\n{operator.triggers()}"
    )


def test_failing_role_reports_task_backs_off_and_recovers(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(
        PROBE, probe("f", namespace, {"message": "boom", "shouldFail": True}), namespace=namespace
    )

    failed = wait_condition(kube, namespace=namespace, name="f", kind="Failure", status="True")
    failure = condition(failed, "Failure")
    assert failure is not None
    assert failure["reason"] == "Failed", failure
    assert "Fail when asked to" in failure["message"], f"task not named: {failure['message']!r}"
    assert "asked to fail with boom" in failure["message"], failure["message"]
    successful = condition(failed, "Successful")
    assert successful is not None and successful["status"] == "False", successful

    # Backoff: retries keep coming, but spaced out (0.5 s, 1 s, 2 s, ...), not a hot loop.
    operator.eventually(
        operator.runs, until=lambda n: n >= 3, describe=">= 3 Ansible runs (retries)"
    )
    assert operator.logged("reconcile failed"), operator.tail()

    kube.patch(PROBE, name="f", namespace=namespace, body={"spec": {"shouldFail": False}})
    recovered = wait_condition(
        kube, namespace=namespace, name="f", kind="Successful", status="True"
    )
    failure = condition(recovered, "Failure")
    assert failure is not None and failure["status"] == "False", (
        f"Failure after recovery: {failure}"
    )


def test_finalizer_runs_on_delete_then_is_removed(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    extra = """  finalizer:
    name: tests.playbook-operator.dev/cleanup
    vars:
      finalizing: true"""
    # Owner injection off: the finalizer's record must outlive the CR.
    start_operator(probe_watches(extra), args=("--inject-owner-ref=false",))
    kube.create(PROBE, probe("z", namespace, {"message": "bye"}), namespace=namespace)
    done = wait_condition(kube, namespace=namespace, name="z", kind="Successful", status="True")
    assert "tests.playbook-operator.dev/cleanup" in done["metadata"].get("finalizers", []), done[
        "metadata"
    ]

    kube.delete(PROBE, name="z", namespace=namespace)

    def gone() -> bool:
        try:
            kube.get(PROBE, name="z", namespace=namespace)
        except Exception:
            return True
        return False

    wait_for(gone, timeout=90, describe="the CR to be deleted once its finalizer ran")
    record = kube.get(CONFIGMAP, name="z-finalized", namespace=namespace)
    assert record["data"] == {"finalized": "true"}, record["data"]


def test_selector_limits_reconciled_objects(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    extra = """  selector:
    matchLabels:
      tier: gold"""
    start_operator(probe_watches(extra))
    kube.create(PROBE, probe("plain", namespace, {"message": "p"}), namespace=namespace)
    kube.create(
        PROBE,
        probe("gold", namespace, {"message": "g"}, labels={"tier": "gold"}),
        namespace=namespace,
    )
    wait_condition(kube, namespace=namespace, name="gold", kind="Successful", status="True")
    plain = kube.get(PROBE, name="plain", namespace=namespace)
    assert not plain.get("status"), f"unselected object was reconciled: {plain.get('status')}"
    assert echo(kube, namespace, "plain") is None


def test_requeue_after_runs_again_without_changes(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(
        PROBE, probe("r", namespace, {"message": "again", "requeue": "1s"}), namespace=namespace
    )
    wait_condition(kube, namespace=namespace, name="r", kind="Successful", status="True")
    operator.eventually(
        operator.runs, until=lambda n: n >= 3, describe=">= 3 runs from requeue_after"
    )
    assert operator.metric("playbook_operator_reconcile_total", result="requeue_after") >= 2


def test_role_status_fields_survive_runner_writes(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    start_operator(probe_watches())
    kube.create(
        PROBE, probe("k", namespace, {"message": "kept", "reportStatus": True}), namespace=namespace
    )
    done = wait_condition(kube, namespace=namespace, name="k", kind="Successful", status="True")
    assert done["status"].get("echoed") == "kept", (
        f"status written by the role lost: {done['status']}"
    )
    types = sorted(c["type"] for c in done["status"]["conditions"])
    # operator-sdk's, and kstatus' Ready and Reconciling (on by default): no role's type lost.
    expected = ["Failure", "Ready", "Reconciling", "Running", "Successful"]
    assert types == expected, f"expected the runtime's conditions {expected}, saw {types}"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param("", "{{ 7 * 6 }}", id="default-is-safe"),
        pytest.param("  markUnsafe: true", "{{ 7 * 6 }}", id="mark-unsafe"),
        pytest.param("  markUnsafe: false", "42", id="opted-in-templating"),
    ],
)
def test_jinja_in_cr_data_is_evaluated_only_when_the_watch_allows_it(
    kube: Client, namespace: str, start_operator: StartOperator, extra: str, expected: str
) -> None:
    start_operator(probe_watches(extra))
    kube.create(PROBE, probe("j", namespace, {"message": "{{ 7 * 6 }}"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="j", kind="Successful", status="True")
    seen = echo(kube, namespace, "j")
    assert seen == expected, f"expected message {expected!r}, saw {seen!r}"


def test_reconciles_after_apiserver_restart(
    cluster: Any, kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("w", namespace, {"message": "before"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="w", kind="Successful", status="True")

    cluster.restart_apiserver()

    kube.patch(PROBE, name="w", namespace=namespace, body={"spec": {"message": "after"}})
    operator.eventually(
        lambda: echo(kube, namespace, "w"),
        until=lambda v: v == "after",
        describe="echo 'after'",
        timeout=120,
    )
    assert operator.returncode is None, "operator exited during the API server restart"


def test_reconcile_period_annotation_resyncs_the_object(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    obj = probe("p", namespace, {"message": "tick"})
    obj["metadata"]["annotations"] = {"ansible.sdk.operatorframework.io/reconcile-period": "1s"}
    kube.create(PROBE, obj, namespace=namespace)
    wait_condition(kube, namespace=namespace, name="p", kind="Successful", status="True")
    operator.eventually(
        operator.runs, until=lambda n: n >= 3, describe=">= 3 runs from a 1s reconcile period"
    )


def test_bad_reconcile_period_annotation_is_a_failure(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    start_operator(probe_watches())
    obj = probe("q", namespace, {"message": "x"})
    obj["metadata"]["annotations"] = {"ansible.sdk.operatorframework.io/reconcile-period": "often"}
    kube.create(PROBE, obj, namespace=namespace)
    failed = wait_condition(kube, namespace=namespace, name="q", kind="Failure", status="True")
    failure = condition(failed, "Failure")
    assert failure is not None
    assert "Unable to parse reconcile period annotation" in failure["message"], failure
