"""Roles through the proxy of a real ``playbook-operator run``, on the embedded cluster.

- A role that replaces, patches and applies objects which existed before its
  custom resource never becomes their owner: deleting the resource
  garbage-collects what the role created, and nothing else.
- A role using ``kubernetes.core.k8s_exec`` and ``k8s_log`` against a (kwok-simulated)
  pod reaches Successful with the pod's answers.
"""

from __future__ import annotations

from pathlib import Path

from devcluster import components
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import wait_for
from tests.proxy.support import running_pod
from tests.runner.support import PROBE, StartOperator, probe, wait_condition

ROLES = Path(__file__).parent / "fixtures" / "roles"
CONFIGMAP = GVK("", "v1", "ConfigMap")


def watches(role: str) -> str:
    return f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: {ROLES / role}\n"


def owners(kube: Client, namespace: str, name: str) -> list[str]:
    meta = kube.get(CONFIGMAP, name=name, namespace=namespace)["metadata"]
    return [ref["uid"] for ref in meta.get("ownerReferences") or []]


def names(kube: Client, namespace: str) -> set[str]:
    return {i["metadata"]["name"] for i in kube.list(CONFIGMAP, namespace=namespace)["items"]}


def test_deleting_the_resource_collects_only_what_its_role_created(
    start_operator: StartOperator, kube: Client, namespace: str
) -> None:
    existing = ("replaced", "applied", "patched")
    for name in existing:
        kube.create(
            CONFIGMAP,
            {"metadata": {"name": name, "namespace": namespace}, "data": {"by": "admin"}},
            namespace=namespace,
        )
    operator = start_operator(watches("adopter"))
    created = kube.create(
        PROBE,
        probe("keeper", namespace, {name: name for name in existing}),
        namespace=namespace,
    )
    wait_condition(
        kube,
        namespace=namespace,
        name="keeper",
        kind="Successful",
        status="True",
        operator=operator,
    )
    uid = created["metadata"]["uid"]
    for name in existing:
        data = kube.get(CONFIGMAP, name=name, namespace=namespace)["data"]
        assert data == {"by": "role"}, f"the role did not write {name}: {data}"
    adopted = {name: owners(kube, namespace, name) for name in existing}
    assert adopted == {name: [] for name in existing}, f"pre-existing objects adopted: {adopted}"
    made = {name: owners(kube, namespace, name) for name in ("keeper-applied", "keeper-created")}
    assert made == {"keeper-applied": [uid], "keeper-created": [uid]}, made

    kube.delete(PROBE, name="keeper", namespace=namespace)
    # The garbage collector removes the owned children; once it has, it has also
    # decided about every other object that named the resource as owner.
    left = wait_for(
        lambda: names(kube, namespace),
        until=lambda found: not found & {"keeper-applied", "keeper-created"},
        describe="the children the role created to be garbage-collected",
        timeout=60,
    )
    assert set(existing) <= left, f"objects the role did not create were deleted: {left}"


def test_role_execs_in_a_pod_and_reads_its_log_through_the_proxy(
    start_operator: StartOperator, kube: Client, namespace: str
) -> None:
    running_pod(kube, namespace, "worker")
    # --zap-log-level=2: ansible-operator's V(2), where its cache decisions are logged.
    operator = start_operator(watches("streams"), args=("--zap-log-level=2",))
    kube.create(PROBE, probe("streamer", namespace, {"pod": "worker"}), namespace=namespace)
    done = wait_condition(
        kube,
        namespace=namespace,
        name="streamer",
        kind="Successful",
        status="True",
        operator=operator,
    )
    status = done["status"]
    assert status.get("exec") == "exec through the proxy", f"k8s_exec answered: {status}"
    assert status.get("log") == components.SIMULATED_LOG_LINE, f"k8s_log answered: {status}"
    # k8s_exec reads the pod first; Pods are no kind the runner caches.
    assert operator.logged("Skipping cache lookup", reason="kind not cached"), operator.tail()
