"""Leader election, metrics, events and graceful shutdown of a real operator process."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import unique_name, wait_for
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

EVENT = GVK("", "v1", "Event")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")


def events_for(kube: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.list(EVENT, namespace=namespace)["items"]
    return [e for e in items if e["involvedObject"].get("name") == name]


def test_metrics_report_reconciles_and_custom_role_metrics(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    metric = f"probe_runs_{unique_name('m').replace('-', '_')}"
    operator = start_operator(probe_watches(), args=("--custom-metrics-bind-address=127.0.0.1:0",))
    kube.create(
        PROBE, probe("m", namespace, {"message": "m", "metric": metric}), namespace=namespace
    )
    wait_condition(kube, namespace=namespace, name="m", kind="Successful", status="True")

    labels = {"group": PROBE.group, "version": "v1", "kind": "Probe"}
    # Successful is written inside the reconcile; its counters move when it returns.
    wait_for(
        lambda: operator.metric("playbook_operator_reconcile_total", result="succeeded", **labels),
        describe="playbook_operator_reconcile_total{result=succeeded} for the Probe",
    )
    assert operator.metric("playbook_operator_reconcile_total", result="succeeded", **labels) == 1
    assert operator.metric("playbook_operator_reconcile_duration_seconds_count", **labels) == 1
    assert operator.metric("playbook_operator_ansible_run_duration_seconds_count", **labels) == 1
    assert operator.metric("playbook_operator_build_info") == 1
    text = operator.metrics()
    for family in ("playbook_operator_queue_depth", "playbook_operator_runs_in_flight"):
        assert f"# TYPE {family} gauge" in text, f"{family} missing from /metrics"
    assert operator.metric(metric) == 1, f"custom metric {metric} not exposed:\n{text[-2000:]}"


def test_failed_and_recovered_reconciles_are_recorded_as_events(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    start_operator(probe_watches())
    kube.create(
        PROBE, probe("e", namespace, {"message": "x", "shouldFail": True}), namespace=namespace
    )
    wait_condition(kube, namespace=namespace, name="e", kind="Failure", status="True")
    warning = wait_for(
        lambda: [e for e in events_for(kube, namespace, "e") if e["reason"] == "ReconcileFailed"],
        describe="a ReconcileFailed event on the CR",
    )[0]
    assert warning["type"] == "Warning", warning
    assert "Fail when asked to" in warning["message"], warning["message"]

    kube.patch(PROBE, name="e", namespace=namespace, body={"spec": {"shouldFail": False}})
    wait_condition(kube, namespace=namespace, name="e", kind="Successful", status="True")
    recovered = wait_for(
        lambda: [
            e for e in events_for(kube, namespace, "e") if e["reason"] == "ReconcileSucceeded"
        ],
        describe="a ReconcileSucceeded event after recovery",
    )[0]
    assert recovered["type"] == "Normal", recovered


def test_sigterm_lets_the_running_reconcile_finish(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(
        PROBE, probe("g", namespace, {"message": "m", "slowSeconds": 4}), namespace=namespace
    )
    operator.eventually(
        lambda: operator.logged("[playbook task start]", task="Take a while"),
        describe="the slow task to start",
    )
    assert operator._proc is not None
    operator._proc.send_signal(signal.SIGTERM)
    code = operator.stop(timeout=60)
    assert code == 0, f"exit code {code}\n{operator.tail()}"
    obj = kube.get(PROBE, name="g", namespace=namespace)
    types = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert types.get("Successful") == "True", f"the in-flight run did not finish: {obj['status']}"
    assert operator.logged("stopped", clean=True), operator.tail()


def test_leader_election_one_reconciler_and_handover(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    lease = unique_name("lease")
    args = (
        "--leader-elect",
        f"--leader-election-id={lease}",
        f"--leader-election-namespace={namespace}",
        "--lease-duration=4s",
        "--renew-deadline=3s",
    )
    first = start_operator(probe_watches(), args=args)
    wait_for(lambda: first.logged("became leader"), describe="the first runner to lead")
    second = start_operator(
        probe_watches(), args=args, leading=False
    )  # a standby: ready, not started
    kube.create(PROBE, probe("l", namespace, {"message": "one"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="l", kind="Successful", status="True")
    assert first.runs() == 1, first.tail()
    assert not second.logged("became leader"), "two leaders at once"
    assert second.address("metrics") is not None
    assert second.runs() == 0, "the standby reconciled while the leader was alive"

    holder = kube.get(LEASE, name=lease, namespace=namespace)["spec"]["holderIdentity"]
    assert first._proc is not None
    first._proc.kill()  # no release: the standby must wait out the lease
    killed = time.monotonic()
    second.eventually(
        lambda: second.logged("became leader"), describe="the standby to take over", timeout=30
    )
    took = time.monotonic() - killed
    assert took < 4 + 2 + 2, f"handover took {took:.1f}s (lease 4s, retry 2s)"
    new_holder = kube.get(LEASE, name=lease, namespace=namespace)["spec"]["holderIdentity"]
    assert new_holder != holder, f"lease still held by {holder}"

    kube.patch(PROBE, name="l", namespace=namespace, body={"spec": {"message": "two"}})
    second.eventually(second.runs, until=lambda n: n >= 1, describe="the new leader to reconcile")
