"""kstatus' conditions on the embedded cluster, judged by kstatus itself (bin/kstatus, the
Go library Flux and Argo CD use): InProgress while a run of a new generation is under
way, Current after it succeeded, Failed once runs keep failing or the input is refused;
and ``kubectl wait --for=condition=Ready`` returns. The runner runs with the harness's
backoff (0.5 s doubling to 4 s), so a CR stalls after its fourth failure in a row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from testkit.harness import FIXTURES, OperatorProcess
from tests.runner.support import PROBE, StartOperator, condition, probe, probe_watches
from tests.status import kstatus_tool

pytestmark = pytest.mark.integration

ROLES = Path(__file__).parent / "roles"
ENV = {"ANSIBLE_ROLES_PATH": f"{ROLES}:{FIXTURES / 'roles'}"}


def kstatus_of(kube: Client, namespace: str, name: str) -> tuple[dict[str, Any], str, str]:
    obj = kube.get(PROBE, name=name, namespace=namespace)
    verdict = kstatus_tool.compute(obj)
    return obj, verdict["status"], verdict["message"]


def wait_kstatus(
    operator: OperatorProcess, kube: Client, namespace: str, name: str, expected: str
) -> tuple[dict[str, Any], str, str]:
    return operator.eventually(
        lambda: kstatus_of(kube, namespace, name),
        until=lambda seen: seen[1] == expected,
        describe=f"kstatus {expected} for {namespace}/{name}",
        timeout=90,
    )


def patch_spec(kube: Client, namespace: str, name: str, spec: dict[str, Any]) -> None:
    kube.patch(PROBE, name=name, namespace=namespace, body={"spec": spec})


def test_kstatus_follows_runs_of_each_generation(
    kube: Client, namespace: str, start_operator: StartOperator, cluster: Any
) -> None:
    kstatus_tool.binary()  # built before the clock of any wait starts
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("p", namespace, {"slow_seconds": 4}), namespace=namespace)
    obj, status, _ = operator.eventually(
        lambda: kstatus_of(kube, namespace, "p"),
        until=lambda seen: (condition(seen[0], "Running") or {}).get("reason") == "Running",
        describe="the first run under way",
    )
    assert status == "InProgress", f"expected InProgress during the first run, saw {status}"
    assert (condition(obj, "Reconciling") or {}).get("status") == "True", obj["status"]

    obj, _, _ = wait_kstatus(operator, kube, namespace, "p", "Current")
    ready = condition(obj, "Ready") or {}
    assert (ready.get("status"), ready.get("observedGeneration")) == ("True", 1), (
        f"expected Ready=True for generation 1, saw {ready}"
    )
    cluster.kubectl("wait", "--for=condition=Ready", "--timeout=30s", "-n", namespace, "probe/p")

    # A failing fail task: InProgress while retries go on, Failed once the backoff caps.
    patch_spec(kube, namespace, "p", {"slow_seconds": 0, "should_fail": True, "message": "x"})
    obj, _, message = wait_kstatus(operator, kube, namespace, "p", "Failed")
    stalled = condition(obj, "Stalled") or {}
    assert (stalled.get("reason"), stalled.get("observedGeneration")) == ("BackoffCapped", 2), (
        f"expected Stalled BackoffCapped at generation 2, saw {stalled}"
    )
    assert "asked to fail with x" in message, f"expected the task's message, saw {message!r}"
    assert (condition(obj, "Ready") or {}).get("status") == "False", obj["status"]

    # The fix is a new generation: Stalled goes, the CR is Current again.
    patch_spec(kube, namespace, "p", {"should_fail": False})
    obj, _, _ = wait_kstatus(operator, kube, namespace, "p", "Current")
    assert (condition(obj, "Stalled") or {}).get("status") == "False", obj["status"]
    assert obj["status"].get("observedGeneration") == 3, obj["status"]


def test_a_refused_input_is_failed_at_once_and_kstatus_can_be_turned_off(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    kstatus_tool.binary()
    watches = (
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: checked\n"
        f"  reconcilePeriod: 1h\n"
    )
    operator = start_operator(watches, env=ENV)
    kube.create(PROBE, probe("big", namespace, {"size": 11}), namespace=namespace)
    obj, _, message = wait_kstatus(operator, kube, namespace, "big", "Failed")
    stalled = condition(obj, "Stalled") or {}
    assert stalled.get("reason") == "Invalid", f"expected Stalled Invalid, saw {stalled}"
    assert "spec.size 11 is above 10" in message, message
    failures = [line for line in operator.lines if line.get("msg") == "reconcile failed"]
    assert len(failures) == 1, f"expected Failed after the first failure, saw {len(failures)}"
    operator.stop()

    off = start_operator(watches + "  kstatusConditions: false\n", env=ENV)
    kube.create(PROBE, probe("plain", namespace, {}), namespace=namespace)
    obj = off.eventually(
        lambda: kube.get(PROBE, name="plain", namespace=namespace),
        until=lambda o: (condition(o, "Successful") or {}).get("status") == "True",
        describe="plain to succeed",
    )
    written = sorted(c["type"] for c in obj["status"]["conditions"])
    assert written == ["Failure", "Running", "Successful"], (
        f"expected only operator-sdk's conditions with kstatusConditions: false, saw {written}"
    )
