"""Roles written for ansible-operator call ``operator_sdk.util`` and run with no edit.

The ``legacy`` role declares ``collections: [operator_sdk.util, kubernetes.core]`` as
operator-sdk scaffolds it, and uses ``k8s_status`` and ``requeue_after`` by short
name, ``operator_sdk.util.k8s_status`` and ``operator_sdk.util.k8s_event`` by FQCN.
"""

from __future__ import annotations

from typing import Any

from runner.kube.client import Client
from runner.kube.types import GVK
from tests.compat.conftest import Start
from tests.runner.support import PROBE, condition, probe, probe_watches, wait_condition

EVENT = GVK("", "v1", "Event")


def test_a_role_using_operator_sdk_util_runs_unchanged(
    kube: Client, namespace: str, operators: Start
) -> None:
    operator = operators(probe_watches().replace("role: probe", "role: legacy"))
    kube.create(PROBE, probe("old", namespace, {}), namespace=namespace)

    done = wait_condition(
        kube, namespace=namespace, name="old", kind="Successful", status="True", operator=operator
    )
    status: dict[str, Any] = done.get("status") or {}
    assert status.get("short") == "written by k8s_status", f"status: {status}"
    legacy = condition(done, "Legacy")
    assert legacy is not None and legacy["reason"] == "Unchanged", f"conditions: {status}"
    events = kube.list(EVENT, namespace=namespace)["items"]
    assert any(e.get("reason") == "LegacyRole" for e in events), (
        f"expected a LegacyRole event, saw {[e.get('reason') for e in events]}"
    )
