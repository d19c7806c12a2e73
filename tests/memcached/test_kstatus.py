"""Each Memcached's kstatus, as kstatus itself computes it (bin/kstatus): InProgress while
its pods roll out, Current once the role reports them serving (its Ready follows
Available once the rollout is done), Failed when the role refuses the spec."""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube.client import Client
from testkit.harness import OperatorProcess
from testkit.pool import placement
from tests.memcached.conftest import MEMCACHED, Create
from tests.status import kstatus_tool

pytestmark = pytest.mark.integration

SLOW = "1.6.38-ready-after-20s"


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def kstatus_of(kube: Client, namespace: str, name: str) -> tuple[dict[str, Any], str, str]:
    obj = kube.get(MEMCACHED, name=name, namespace=namespace)
    verdict = kstatus_tool.compute(obj)
    return obj, verdict["status"], verdict["message"]


def test_kstatus_of_a_memcached_through_its_rollout_and_a_refused_spec(
    kube: Client, mc_namespace: str, pool: str, create: Create, operator: OperatorProcess
) -> None:
    kstatus_tool.binary()
    create("ks", size=1, version=SLOW, **placement(pool))

    # The first run ends while the pod starts: the role says Ready=False, RollingOut.
    obj, status, message = operator.eventually(
        lambda: kstatus_of(kube, mc_namespace, "ks"),
        until=lambda seen: conditions(seen[0]).get("Successful", {}).get("status") == "True",
        describe="the first run of ks to succeed",
        timeout=120,
    )
    ready = conditions(obj).get("Ready", {})
    assert ready.get("status") == "False", f"expected the role's Ready=False, saw {ready}"
    assert status == "InProgress", f"expected InProgress while rolling out, saw {status}"

    obj, _, _ = operator.eventually(
        lambda: kstatus_of(kube, mc_namespace, "ks"),
        until=lambda seen: seen[1] == "Current",
        describe="ks Current once its pod serves",
        timeout=180,
    )
    found = conditions(obj)
    assert found["Available"]["status"] == "True", f"expected Available, saw {found}"
    assert found["Ready"]["reason"] == "PodsAvailable", f"expected the role's Ready: {found}"

    # Item memory above the memory limit: the role's assert refuses it, Failed at once.
    kube.patch(
        MEMCACHED,
        name="ks",
        namespace=mc_namespace,
        body={"spec": {"memoryLimitMB": 256, "resources": {"limits": {"memory": "64Mi"}}}},
    )
    obj, _, message = operator.eventually(
        lambda: kstatus_of(kube, mc_namespace, "ks"),
        until=lambda seen: seen[1] == "Failed",
        describe="ks Failed once the role refuses its spec",
        timeout=120,
    )
    stalled = conditions(obj)["Stalled"]
    assert (stalled["reason"], stalled["observedGeneration"]) == ("Invalid", 2), stalled
    assert "must be below the memcached container's memory limit" in message, message
