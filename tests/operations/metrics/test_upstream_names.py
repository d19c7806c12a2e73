"""A real runner's /metrics after a reconcile, a failed reconcile and a requeue.

Dashboards and alerts written for ansible-operator read controller-runtime's
``controller_runtime_*``, client-go's ``workqueue_*`` and ansible-operator's own
families; they must find them with the same names, labels and meaning here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

import pytest

from runner.kube.client import Client
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

CONTROLLER = "probe-controller"  # ansible-operator: the lower-cased kind + "-controller"
GVK = f"{PROBE.group}/{PROBE.version}, Kind={PROBE.kind}"  # Go's GroupVersionKind.String()
SAMPLE = re.compile(r"^([^{ ]+)(?:\{(.*)\})? (\S+)$")

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(operator: OperatorProcess) -> Series:
    found: Series = {}
    for line in operator.metrics().splitlines():
        match = SAMPLE.match(line)
        if line.startswith("#") or not match:
            continue
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        found[(match.group(1), labels)] = float(match.group(3))
    return found


def pick(series: Series, metric: str, /, **labels: str) -> float | None:
    """The value of the one series with exactly these labels; None if absent."""
    return series.get((metric, frozenset(labels.items())))


def runtime(series: Series) -> dict[str, float | None]:
    """The controller's series, by a short name."""
    ctrl = {"controller": CONTROLLER}
    queue = {"name": CONTROLLER}
    view = {
        result: pick(series, "controller_runtime_reconcile_total", result=result, **ctrl)
        for result in ("success", "error", "requeue", "requeue_after")
    }
    view.update(
        errors=pick(series, "controller_runtime_reconcile_errors_total", **ctrl),
        timed=pick(series, "controller_runtime_reconcile_time_seconds_count", **ctrl),
        max_workers=pick(series, "controller_runtime_max_concurrent_reconciles", **ctrl),
        active=pick(series, "controller_runtime_active_workers", **ctrl),
        depth=pick(series, "workqueue_depth", **queue),
        adds=pick(series, "workqueue_adds_total", **queue),
        retries=pick(series, "workqueue_retries_total", **queue),
        waited=pick(series, "workqueue_queue_duration_seconds_count", **queue),
        worked=pick(series, "workqueue_work_duration_seconds_count", **queue),
        unfinished=pick(series, "workqueue_unfinished_work_seconds", **queue),
        longest=pick(series, "workqueue_longest_running_processor_seconds", **queue),
        succeeded=pick(series, "ansible_operator_reconcile_result", GVK=GVK, result="succeeded"),
        failed=pick(series, "ansible_operator_reconcile_result", GVK=GVK, result="failed"),
        runs=pick(series, "ansible_operator_reconciles_count", GVK=GVK),
    )
    return view


def settled(
    operator: OperatorProcess, expected: Mapping[str, float | None]
) -> dict[str, float | None]:
    """Wait until the controller is idle and its series include ``expected``."""

    def observe() -> dict[str, float | None]:
        return runtime(scrape(operator))

    def done(view: dict[str, float | None]) -> bool:
        idle = view["active"] == 0 and view["depth"] == 0 and view["longest"] == 0
        return idle and all(view[key] == value for key, value in expected.items())

    return operator.eventually(observe, until=done, describe=f"idle with {expected}", timeout=90)


def created_at(kube: Client, namespace: str, name: str) -> float:
    stamp = kube.get(PROBE, name=name, namespace=namespace)["metadata"]["creationTimestamp"]
    return float(int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()))


def resource_series(namespace: str, name: str) -> tuple[str, frozenset[tuple[str, str]]]:
    labels = {
        "group": PROBE.group,
        "version": PROBE.version,
        "kind": PROBE.kind,
        "namespace": namespace,
        "name": name,
    }
    return ("resource_created_at_seconds", frozenset(labels.items()))


def test_reconcile_failure_and_requeue_in_upstream_families(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    # controller-runtime creates every result series of a controller at 0.
    settled(
        operator,
        {"success": 0, "error": 0, "requeue": 0, "requeue_after": 0, "errors": 0}
        | {"max_workers": 2, "adds": 0, "retries": 0},
    )

    # A reconcile: ansible-operator returns the reconcile period, so it is requeue_after,
    # and the delayed re-add is a workqueue retry, as in client-go.
    kube.create(PROBE, probe("ok", namespace, {"message": "m"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="ok", kind="Successful", status="True")
    settled(
        operator,
        {"success": 0, "error": 0, "requeue_after": 1, "errors": 0, "timed": 1}
        | {"adds": 1, "retries": 1, "waited": 1, "worked": 1, "unfinished": 0}
        | {"succeeded": 1, "failed": None, "runs": 1},  # no failed series before a failure
    )
    seen = scrape(operator)
    assert seen.get(resource_series(namespace, "ok")) == created_at(kube, namespace, "ok"), (
        f"expected resource_created_at_seconds of ok, saw "
        f"{[k for k in seen if k[0] == 'resource_created_at_seconds']}"
    )

    # A failed reconcile, retried with backoff, then fixed.
    kube.create(PROBE, probe("bad", namespace, {"shouldFail": True}), namespace=namespace)
    operator.eventually(
        lambda: runtime(scrape(operator))["errors"],
        until=lambda errors: errors is not None and errors >= 2,
        describe="two failed reconciles of bad",
    )
    kube.patch(PROBE, name="bad", namespace=namespace, body={"spec": {"shouldFail": False}})
    wait_condition(kube, namespace=namespace, name="bad", kind="Successful", status="True")
    view = settled(operator, {"success": 0, "requeue_after": 2})
    failures = view["error"]
    assert failures is not None and failures >= 2, view
    expected = {
        "errors": failures,  # each error counted once in each family
        "failed": failures,
        "succeeded": 2,
        "runs": failures + 2,
        "timed": failures + 2,
        "adds": failures + 2,  # one per reconcile: the queue was idle between them
        "waited": failures + 2,
        "worked": failures + 2,
        "retries": failures + 2,  # each failure's backoff and each success's period
    }
    assert {key: view[key] for key in expected} == expected, f"expected {expected}, saw {view}"

    # A requeue asked for by the role, then the object deleted: the reconcile of an
    # object that is gone asks for nothing, which is controller-runtime's success.
    kube.create(PROBE, probe("again", namespace, {"requeue": "1s"}), namespace=namespace)
    operator.eventually(
        lambda: runtime(scrape(operator))["requeue_after"],
        until=lambda count: count is not None and count >= 5,
        describe="the requeued probe reconciled 3 times",
    )
    assert resource_series(namespace, "again") in scrape(operator)
    kube.delete(PROBE, name="again", namespace=namespace)
    operator.eventually(
        lambda: (
            runtime(scrape(operator))["success"],
            resource_series(namespace, "again") in scrape(operator),
        ),
        until=lambda seen: seen[0] is not None and seen[0] >= 1 and not seen[1],
        describe="a success result and no resource_created_at_seconds for the deleted probe",
    )


def test_role_counter_is_exposed_under_its_own_name(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    metric = f"probe_things_{unique_name('m').replace('-', '_')}"
    operator = start_operator(probe_watches(), args=("--custom-metrics-bind-address=127.0.0.1:0",))
    kube.create(
        PROBE, probe("c", namespace, {"message": "m", "metric": metric}), namespace=namespace
    )
    wait_condition(kube, namespace=namespace, name="c", kind="Successful", status="True")
    text = operator.metrics().splitlines()
    assert f"# TYPE {metric} counter" in text and f"{metric} 1" in text, (
        f"expected counter {metric} 1 in:\n" + "\n".join(line for line in text if "probe" in line)
    )
    extra = [line for line in text if f"{metric}_" in line]
    assert not extra, f"expected no _total or _created series, saw {extra}"
