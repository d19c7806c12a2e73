"""Fixtures for the cache budget's tests: dependent watches of one owner on the real cluster."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runner.config import entry, selector
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, ObjectKey
from runner.proxy import ownership
from runner.queue import workqueue
from runner.watch import dependents

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Registry = Callable[..., dependents.DependentWatches]


def owner_watch(**keys: Any) -> entry.Watch:
    """The owner kind's watch (a ConfigMap plays the custom resource), with ``keys`` set."""
    return entry.Watch(
        gvk=CONFIGMAP,
        role=None,
        playbook=None,
        vars={},
        reconcile_period=None,
        manage_status=True,
        watch_dependent_resources=True,
        watch_cluster_scoped_resources=False,
        max_runner_artifacts=20,
        finalizer=None,
        blacklist=frozenset(),
        selector=selector.LabelSelector.parse(None),
        snake_case_parameters=True,
        mark_unsafe=True,
        watch_annotations_changes=False,
        **keys,
    )


@pytest.fixture
def owner(kube: Client, namespace: str) -> KubeObject:
    return kube.create(
        CONFIGMAP, {"metadata": {"name": "owner", "namespace": namespace}}, namespace=namespace
    )


@pytest.fixture
def child(kube: Client, namespace: str, owner: KubeObject) -> Callable[..., KubeObject]:
    """Create a child of ``owner`` (or, with ``owned=False``, a stranger) of kind ``gvk``."""

    def create(
        gvk: GVK, name: str, *, owned: bool = True, labels: dict[str, str] | None = None
    ) -> KubeObject:
        body: KubeObject = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                # As client-side apply leaves it: runs read it back to compute their patch.
                "annotations": {LAST_APPLIED: '{"data":{"key":"value"}}'},
            },
            "data": {"key": "dmFsdWU="} if gvk == SECRET else {"key": "value"},
        }
        if owned:
            ownership.inject(
                ownership.Owner.of(owner), body, child_namespaced=True, child_namespace=namespace
            )
        return kube.create(gvk, body, namespace=namespace)

    return create


@pytest.fixture
def registry(kube: Client, namespace: str) -> Iterator[Registry]:
    """Start dependent watches (in ``namespace``) for the ConfigMap owner kind's watch."""
    stop = threading.Event()

    def start(watch: entry.Watch) -> dependents.DependentWatches:
        def enqueue(key: ObjectKey, priority: workqueue.Priority, *why: object) -> None:
            return None

        return dependents.DependentWatches(
            client=kube,
            namespaces=(namespace,),
            stop=stop,
            watches_by_gvk={CONFIGMAP: watch},
            enqueue_for={CONFIGMAP: enqueue},
            owner_namespaced={CONFIGMAP: True},
        )

    yield start
    stop.set()
