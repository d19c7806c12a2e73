"""Owner references without role changes, and dependent watches putting children back."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import unique_name, wait_for
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
NAMESPACE = GVK("", "v1", "Namespace")


def data(kube: Client, namespace: str, name: str) -> dict[str, str] | None:
    try:
        return dict(kube.get(CONFIGMAP, name=name, namespace=namespace).get("data") or {})
    except kube_errors.NotFoundError:
        return None


def test_children_get_owner_references_and_are_garbage_collected(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    start_operator(probe_watches())
    owner = kube.create(PROBE, probe("o", namespace, {"message": "m"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="o", kind="Successful", status="True")

    child = kube.get(CONFIGMAP, name="o-echo", namespace=namespace)
    refs = child["metadata"].get("ownerReferences", [])
    assert refs == [
        {
            "apiVersion": PROBE.api_version,
            "kind": "Probe",
            "name": "o",
            "uid": owner["metadata"]["uid"],
        }
    ], f"ownerReferences: {refs}"

    kube.delete(PROBE, name="o", namespace=namespace)
    wait_for(
        lambda: data(kube, namespace, "o-echo"),
        until=lambda d: d is None,
        describe="the child ConfigMap to be garbage-collected",
        timeout=60,
    )


def test_other_namespace_and_cluster_scoped_children_are_annotated(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    other = unique_name("other")
    kube.create(NAMESPACE, {"metadata": {"name": other}})
    role_name = unique_name("probe-child")
    try:
        start_operator(
            probe_watches("  watchClusterScopedResources: true"),
            env={"WATCH_NAMESPACE": f"{namespace},{other}"},  # the remote child is watched too
        )
        spec = {"message": "m", "otherNamespace": other, "clusterRole": role_name}
        kube.create(PROBE, probe("x", namespace, spec), namespace=namespace)
        wait_condition(kube, namespace=namespace, name="x", kind="Successful", status="True")
        expected = {
            "operator-sdk/primary-resource": f"{namespace}/x",
            "operator-sdk/primary-resource-type": "Probe.tests.playbook-operator.dev",
        }
        for obj in (
            kube.get(CONFIGMAP, name="x-remote", namespace=other),
            kube.get(CLUSTER_ROLE, name=role_name),
        ):
            meta = obj["metadata"]
            assert "ownerReferences" not in meta, meta
            notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k in expected}
            assert notes == expected, f"{obj['kind']} annotations: {meta.get('annotations')}"

        # watchClusterScopedResources: deleting the annotated cluster-scoped child
        # triggers the owner, which puts it back.
        before = kube.get(CLUSTER_ROLE, name=role_name)["metadata"]["uid"]
        kube.delete(CLUSTER_ROLE, name=role_name)
        wait_for(
            lambda: _uid(kube, role_name),
            until=lambda uid: uid is not None and uid != before,
            describe="the deleted ClusterRole to be recreated",
            timeout=60,
        )
    finally:
        kube.delete(NAMESPACE, name=other)
        with contextlib.suppress(kube_errors.NotFoundError):
            kube.delete(CLUSTER_ROLE, name=role_name)


def _uid(kube: Client, name: str) -> str | None:
    try:
        return str(kube.get(CLUSTER_ROLE, name=name)["metadata"]["uid"])
    except kube_errors.NotFoundError:
        return None


def test_changed_or_deleted_child_is_put_back(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("d", namespace, {"message": "desired"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="d", kind="Successful", status="True")

    kube.patch(CONFIGMAP, name="d-echo", namespace=namespace, body={"data": {"message": "drift"}})
    operator.eventually(
        lambda: data(kube, namespace, "d-echo"),
        until=lambda d: d == {"message": "desired"},
        describe="the hand-edited child to be reverted",
    )

    kube.delete(CONFIGMAP, name="d-echo", namespace=namespace)
    operator.eventually(
        lambda: data(kube, namespace, "d-echo"),
        until=lambda d: d == {"message": "desired"},
        describe="the deleted child to be recreated",
    )


def test_dependent_watches_return_after_restart(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    first = start_operator(probe_watches())
    kube.create(PROBE, probe("r", namespace, {"message": "desired"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="r", kind="Successful", status="True")
    assert first.stop() == 0, first.tail()

    second = start_operator(probe_watches())
    # The CR succeeded and its child is unchanged, so its first run waits in the
    # start-up spread; the child its status records is read at start-up, and that is
    # enough to rebuild the watch: deleting the child runs the CR at once.
    second.eventually(
        lambda: second.logged("watching dependent kind"),
        describe="the ConfigMap watch rebuilt from status.reconciledChildren at start-up",
    )
    assert second.runs() == 0, f"expected the unchanged CR's first run spread, saw {second.runs()}"
    kube.delete(CONFIGMAP, name="r-echo", namespace=namespace)
    second.eventually(
        lambda: data(kube, namespace, "r-echo"),
        until=lambda d: d == {"message": "desired"},
        describe="the child deleted after a restart to be recreated",
    )


def test_blacklisted_kind_is_not_watched(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    extra = """  blacklist:
    - group: ""
      version: v1
      kind: ConfigMap"""
    operator = start_operator(probe_watches(extra))
    kube.create(PROBE, probe("b", namespace, {"message": "one"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="b", kind="Successful", status="True")
    before = operator.runs()

    kube.patch(CONFIGMAP, name="b-echo", namespace=namespace, body={"data": {"message": "drift"}})
    # The spec change is the marker: had the child edit been watched, it would have
    # triggered its own run before this one.
    kube.patch(PROBE, name="b", namespace=namespace, body={"spec": {"message": "two"}})
    operator.eventually(
        lambda: data(kube, namespace, "b-echo"),
        until=lambda d: d == {"message": "two"},
        describe="the spec change reconciled",
    )
    wait_condition(kube, namespace=namespace, name="b", kind="Successful", status="True")
    assert operator.runs() == before + 1, f"runs: {operator.runs() - before}\n{operator.triggers()}"
    assert not operator.logged("watching dependent kind"), "a blacklisted kind was watched"


def test_inject_owner_ref_false_sets_no_owner(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    start_operator(probe_watches(), args=("--inject-owner-ref=false",))
    kube.create(PROBE, probe("n", namespace, {"message": "m"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="n", kind="Successful", status="True")
    meta: dict[str, Any] = kube.get(CONFIGMAP, name="n-echo", namespace=namespace)["metadata"]
    assert "ownerReferences" not in meta, meta
