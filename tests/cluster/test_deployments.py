"""A Deployment goes through the whole control plane: controller-manager creates the
ReplicaSet and pods, the scheduler binds them to the kwok node, kwok makes them Ready,
and the garbage collector removes them with their owner."""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube import client
from runner.kube.types import GVK, KubeObject
from testkit.helpers import wait_for

DEPLOYMENT = GVK("apps", "v1", "Deployment")
REPLICA_SET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")


def deployment(name: str, *, replicas: int) -> KubeObject:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "example.invalid/app:1"}]},
            },
        },
    }


def ready_replicas(kube: client.Client, *, namespace: str, name: str) -> int:
    status: dict[str, Any] = kube.get(DEPLOYMENT, name=name, namespace=namespace).get("status", {})
    return int(status.get("readyReplicas", 0))


def names_of(listing: KubeObject) -> list[str]:
    return sorted(item["metadata"]["name"] for item in listing["items"])


def pod_names(kube: client.Client, *, namespace: str, app: str) -> list[str]:
    return names_of(kube.list(POD, namespace=namespace, query={"labelSelector": f"app={app}"}))


@pytest.mark.parametrize(
    "replicas",
    [pytest.param(1, id="one-replica"), pytest.param(3, id="three-replicas")],
)
def test_deployment_becomes_ready(kube: client.Client, namespace: str, replicas: int) -> None:
    kube.create(DEPLOYMENT, deployment("web", replicas=replicas), namespace=namespace)

    wait_for(
        lambda: ready_replicas(kube, namespace=namespace, name="web"),
        until=lambda n: n == replicas,
        describe=f"status.readyReplicas == {replicas}",
    )
    pods = kube.list(POD, namespace=namespace)["items"]
    phases = sorted(p.get("status", {}).get("phase", "") for p in pods)
    assert phases == ["Running"] * replicas, f"expected {replicas} Running pods, saw {phases}"


@pytest.mark.parametrize(
    ("start", "target"),
    [pytest.param(3, 1, id="scale-down-3-to-1"), pytest.param(1, 3, id="scale-up-1-to-3")],
)
def test_scaling_converges(kube: client.Client, namespace: str, start: int, target: int) -> None:
    kube.create(DEPLOYMENT, deployment("web", replicas=start), namespace=namespace)
    wait_for(
        lambda: ready_replicas(kube, namespace=namespace, name="web"),
        until=lambda n: n == start,
        describe=f"{start} ready replicas before scaling",
    )

    kube.patch(DEPLOYMENT, name="web", namespace=namespace, body={"spec": {"replicas": target}})

    wait_for(
        lambda: ready_replicas(kube, namespace=namespace, name="web"),
        until=lambda n: n == target,
        describe=f"{target} ready replicas after scaling",
    )
    wait_for(
        lambda: pod_names(kube, namespace=namespace, app="web"),
        until=lambda names: len(names) == target,
        describe=f"exactly {target} pods (the surplus deleted)",
    )


def test_deleting_deployment_collects_replicaset_and_pods(
    kube: client.Client, namespace: str
) -> None:
    kube.create(DEPLOYMENT, deployment("web", replicas=3), namespace=namespace)
    wait_for(
        lambda: ready_replicas(kube, namespace=namespace, name="web"),
        until=lambda n: n == 3,
        describe="3 ready replicas",
    )
    assert len(kube.list(REPLICA_SET, namespace=namespace)["items"]) == 1

    # Background propagation (the API default): the garbage collector does the work.
    kube.delete(DEPLOYMENT, name="web", namespace=namespace)

    wait_for(
        lambda: names_of(kube.list(REPLICA_SET, namespace=namespace)),
        until=lambda names: names == [],
        describe="no ReplicaSets left",
    )
    wait_for(
        lambda: pod_names(kube, namespace=namespace, app="web"),
        until=lambda names: names == [],
        describe="no pods left",
    )
