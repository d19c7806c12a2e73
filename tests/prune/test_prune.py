"""Pruning on the embedded cluster: after a successful run, the owned children it no
longer makes are deleted (with an Event naming each); a failing run deletes nothing; a
child without the CR's owner reference stays; off by default and per CR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import FIXTURES, OperatorProcess
from tests.runner.support import PROBE, StartOperator, probe, wait_condition

pytestmark = pytest.mark.integration

CM = GVK("", "v1", "ConfigMap")
EVENT = GVK("", "v1", "Event")
ROLES = Path(__file__).parent / "roles"
ENV = {"ANSIBLE_ROLES_PATH": f"{ROLES}:{FIXTURES / 'roles'}"}


def watches(extra: str = "") -> str:
    return f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: listed\n{extra}"


def config_maps(kube: Client, namespace: str) -> set[str]:
    items = kube.list(CM, namespace=namespace)["items"]
    return {i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")}


def set_spec(kube: Client, namespace: str, spec: dict[str, Any], **meta: Any) -> None:
    kube.patch(PROBE, name="p", namespace=namespace, body={"spec": spec, "metadata": meta})


def converge(
    kube: Client, namespace: str, operator: OperatorProcess, *, kind: str = "Successful"
) -> None:
    wait_condition(kube, namespace=namespace, name="p", kind=kind, status="True", operator=operator)


def test_a_dropped_child_is_pruned_and_nothing_else(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(watches("  prune: true\n"), env=ENV)
    kube.create(PROBE, probe("p", namespace, {"names": ["a", "b"]}), namespace=namespace)
    converge(kube, namespace, operator)
    stray = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p-stray"}}
    kube.create(CM, stray, namespace=namespace)  # made outside the proxy: no owner reference
    assert {"p-a", "p-b", "p-stray"} <= config_maps(kube, namespace)

    # A failing run that no longer makes p-b deletes nothing.
    set_spec(kube, namespace, {"names": ["a"], "should_fail": True})
    converge(kube, namespace, operator, kind="Failure")
    assert {"p-a", "p-b", "p-stray"} <= config_maps(kube, namespace), (
        f"expected nothing pruned after a failed run, saw {config_maps(kube, namespace)}"
    )

    # The next successful run prunes p-b, and only it.
    set_spec(kube, namespace, {"names": ["a"], "should_fail": False})
    converge(kube, namespace, operator)
    left = operator.eventually(
        lambda: config_maps(kube, namespace),
        until=lambda names: "p-b" not in names,
        describe="p-b pruned",
    )
    assert {"p-a", "p-stray"} <= left, f"expected p-a and the stray kept, saw {left}"
    assert operator.logged(
        "pruned a child the run no longer makes", child=f"ConfigMap {namespace}/p-b"
    )
    events = kube.list(EVENT, namespace=namespace)["items"]
    pruned = [e["message"] for e in events if e.get("reason") == "Pruned"]
    assert pruned == [
        f"Deleted ConfigMap {namespace}/p-b: the last successful run no longer makes it"
    ], f"expected one Pruned Event naming p-b, saw {pruned}"

    # The annotation turns it off for this CR.
    set_spec(kube, namespace, {"names": []}, annotations={"playbook-operator.io/prune": "false"})
    converge(kube, namespace, operator)
    assert "p-a" in config_maps(kube, namespace), "expected no pruning with the annotation"


def test_pruning_is_off_by_default(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(watches(), env=ENV)
    kube.create(PROBE, probe("p", namespace, {"names": ["a", "b"]}), namespace=namespace)
    converge(kube, namespace, operator)
    set_spec(kube, namespace, {"names": ["a"]})
    converge(kube, namespace, operator)
    names = config_maps(kube, namespace)
    assert {"p-a", "p-b"} <= names, f"expected p-b kept (pruning is opt-in), saw {names}"
