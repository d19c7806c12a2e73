"""Readiness of children: what a watch with watchDependentReadiness reacts to, and only it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from runner.config import entry, selector
from runner.kube.types import GVK, ObjectKey
from runner.queue import workqueue
from runner.watch import dependents, predicate
from runner.watch.predicate import Event, EventType, Readiness

DEPLOYMENT = GVK("apps", "v1", "Deployment")
OWNER = GVK("cache.example.com", "v1alpha1", "Memcached")
OTHER = GVK("other.example.com", "v1", "Other")


def deployment(
    status: dict[str, Any] | None = None, *, generation: int = 1, size: int = 1, rv: str = "1"
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "generation": generation,
            "resourceVersion": rv,
            "ownerReferences": [
                {"apiVersion": OWNER.api_version, "kind": OWNER.kind, "name": "m", "uid": "u1"},
                {"apiVersion": OTHER.api_version, "kind": OTHER.kind, "name": "o", "uid": "u2"},
            ],
        },
        "spec": {"replicas": size},
        "status": status or {},
    }


DONE = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}
DONE |= {"readyReplicas": 1, "availableReplicas": 1}
STALLED = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(deployment(), Readiness.IN_PROGRESS, id="deployment-no-status-yet"),
        pytest.param(
            deployment({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}),
            Readiness.IN_PROGRESS,
            id="deployment-pod-starting",
        ),
        pytest.param(deployment(DONE), Readiness.CURRENT, id="deployment-ready"),
        pytest.param(
            deployment(DONE, generation=2), Readiness.IN_PROGRESS, id="deployment-spec-unseen"
        ),
        pytest.param(
            deployment({**DONE, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2}),
            Readiness.IN_PROGRESS,
            id="deployment-old-pod-left",
        ),
        pytest.param(deployment({"observedGeneration": 1}, size=0), Readiness.CURRENT, id="zero"),
        pytest.param(
            deployment({**DONE, "conditions": [STALLED]}), Readiness.FAILED, id="deadline"
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"generation": 3},
                "spec": {"replicas": 2},
                "status": {
                    "observedGeneration": 3,
                    "readyReplicas": 2,
                    "updatedReplicas": 2,
                    "currentRevision": "a",
                    "updateRevision": "b",
                },
            },
            Readiness.IN_PROGRESS,
            id="statefulset-revision-rolling",
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "status": {
                    "desiredNumberScheduled": 2,
                    "currentNumberScheduled": 2,
                    "updatedNumberScheduled": 2,
                    "numberReady": 2,
                    "numberAvailable": 2,
                },
            },
            Readiness.CURRENT,
            id="daemonset-ready",
        ),
        pytest.param(
            {"kind": "Pod", "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            Readiness.IN_PROGRESS,
            id="ready-condition-false",
        ),
        pytest.param({"kind": "ConfigMap", "data": {}}, Readiness.CURRENT, id="no-status"),
    ],
)
def test_readiness(obj: dict[str, Any], expected: Readiness) -> None:
    assert predicate.readiness(obj) is expected, (
        f"expected {expected}, saw {predicate.readiness(obj)}"
    )


STARTING = deployment({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1})


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(Event(EventType.MODIFIED, deployment(DONE), old=STARTING), True, id="ready"),
        pytest.param(Event(EventType.MODIFIED, STARTING, old=deployment()), False, id="progress"),
        pytest.param(Event(EventType.MODIFIED, STARTING, old=deployment(DONE)), True, id="lost"),
        pytest.param(Event(EventType.ADDED, deployment(DONE)), False, id="added"),
    ],
)
def test_readiness_changed(event: Event, expected: bool) -> None:
    assert predicate.readiness_changed(event) is expected


def _registry(*, readiness: frozenset[str]) -> tuple[dependents.DependentWatches, list[str]]:
    """Dependent watches of Deployments for two owner kinds; only OWNER may opt in."""
    heard: list[str] = []

    def watch(gvk: GVK, kinds: frozenset[str]) -> entry.Watch:
        return entry.Watch(
            gvk=gvk,
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
            watch_dependent_readiness=kinds,
        )

    def enqueue_as(gvk: GVK) -> dependents.Enqueue:
        def enqueue(key: ObjectKey, priority: workqueue.Priority, why: object) -> None:
            heard.append(f"{gvk.kind} {key} {priority.name}")

        return enqueue

    registry = dependents.DependentWatches(
        client=None,  # type: ignore[arg-type]  # no informer is started here
        namespaces=(),
        stop=threading.Event(),
        watches_by_gvk={OWNER: watch(OWNER, readiness), OTHER: watch(OTHER, frozenset())},
        enqueue_for={OWNER: enqueue_as(OWNER), OTHER: enqueue_as(OTHER)},
        owner_namespaced={OWNER: True, OTHER: True},
    )
    registry._owners[DEPLOYMENT] = {OWNER, OTHER}  # as ensure() records them
    return registry, heard


@pytest.mark.parametrize(
    ("readiness", "event", "expected"),
    [
        pytest.param(
            frozenset({"Deployment.apps"}),
            Event(EventType.MODIFIED, deployment(DONE, rv="2"), old=STARTING),
            # behind new and changed objects, as the requeue it replaces would be
            ["Memcached ns/m RESYNC"],
            id="ready-reaches-the-owner-that-asked-only",
        ),
        pytest.param(
            frozenset({"Deployment.apps"}),
            Event(EventType.MODIFIED, deployment(STARTING["status"], rv="2"), old=deployment()),
            [],
            id="progress-reaches-nobody",
        ),
        pytest.param(
            frozenset(),
            Event(EventType.MODIFIED, deployment(DONE, rv="2"), old=STARTING),
            [],
            id="not-asked-status-reaches-nobody",
        ),
        pytest.param(
            frozenset(),
            Event(EventType.MODIFIED, deployment(rv="2", size=3), old=deployment()),
            ["Memcached ns/m EVENT", "Other ns/o EVENT"],
            id="spec-change-reaches-every-owner",
        ),
    ],
)
def test_dependent_handler_hears_readiness_only_where_asked(
    readiness: frozenset[str], event: Event, expected: list[str]
) -> None:
    registry, heard = _registry(readiness=readiness)
    registry._handler(DEPLOYMENT)(event)
    assert sorted(heard) == expected, f"expected {expected} enqueued, saw {heard}"
