"""Owner references vs annotations, path parsing and child-to-owner mapping."""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube import paths
from runner.kube.types import GVK
from runner.proxy import ownership

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
NAMESPACED_OWNER = ownership.Owner(gvk=MEMCACHED, name="m", namespace="ns", uid="u-1")
CLUSTER_OWNER = ownership.Owner(
    gvk=GVK("example.com", "v1", "Tenant"), name="t", namespace="", uid="u-2"
)


@pytest.mark.parametrize(
    ("owner", "namespaced", "child_namespace", "expect_ref"),
    [
        pytest.param(NAMESPACED_OWNER, True, "ns", True, id="same-namespace"),
        pytest.param(NAMESPACED_OWNER, True, "other", False, id="other-namespace"),
        pytest.param(NAMESPACED_OWNER, False, "", False, id="cluster-scoped-child"),
        pytest.param(CLUSTER_OWNER, True, "ns", True, id="cluster-owner-namespaced-child"),
        pytest.param(CLUSTER_OWNER, False, "", True, id="cluster-owner-cluster-child"),
    ],
)
def test_inject(
    owner: ownership.Owner, namespaced: bool, child_namespace: str, expect_ref: bool
) -> None:
    child: dict[str, Any] = {"metadata": {"name": "c"}}
    ownership.inject(owner, child, child_namespaced=namespaced, child_namespace=child_namespace)
    meta = child["metadata"]
    if expect_ref:
        assert meta["ownerReferences"] == [owner.reference()], meta
        assert "annotations" not in meta, meta
    else:
        assert "ownerReferences" not in meta, meta
        assert meta["annotations"] == {
            "operator-sdk/primary-resource": f"{owner.namespace}/{owner.name}",
            "operator-sdk/primary-resource-type": "Memcached.cache.example.com",
        }, meta
    assert owner.owns(child), "the injected child should be recognised as owned"


def test_inject_keeps_existing_references_and_is_idempotent() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u-9"}
    child: dict[str, Any] = {"metadata": {"ownerReferences": [other]}}
    for _ in range(2):
        ownership.inject(NAMESPACED_OWNER, child, child_namespaced=True, child_namespace="ns")
    assert child["metadata"]["ownerReferences"] == [other, NAMESPACED_OWNER.reference()]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(
            "/api/v1/namespaces/ns/services",
            ("", "v1", "ns", "services", "", ""),
            id="core-collection",
        ),
        pytest.param(
            "/api/v1/namespaces/ns/pods/p/log",
            ("", "v1", "ns", "pods", "p", "log"),
            id="subresource",
        ),
        pytest.param(
            "/api/v1/namespaces/ns", ("", "v1", "", "namespaces", "ns", ""), id="namespace-object"
        ),
        pytest.param(
            "/api/v1/namespaces/ns/status",
            ("", "v1", "", "namespaces", "ns", "status"),
            id="namespace-status",
        ),
        pytest.param(
            "/apis/apps/v1/namespaces/ns/deployments/d",
            ("apps", "v1", "ns", "deployments", "d", ""),
            id="group",
        ),
        pytest.param(
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            ("rbac.authorization.k8s.io", "v1", "", "clusterroles", "", ""),
            id="cluster",
        ),
    ],
)
def test_parse_path(path: str, expected: tuple[str, ...]) -> None:
    target = paths.parse_path(path)
    assert target is not None, path
    got = (
        target.group,
        target.version,
        target.namespace,
        target.plural,
        target.name,
        target.subresource,
    )
    assert got == expected


@pytest.mark.parametrize("path", ["/version", "/apis", "/api/v1", "/openapi/v2", "/healthz"])
def test_parse_path_non_resource(path: str) -> None:
    assert paths.parse_path(path) is None


def test_owner_keys_from_references_and_annotations() -> None:
    child = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "cache.example.com/v1alpha1",
                    "kind": "Memcached",
                    "name": "m",
                    "uid": "1",
                },
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "2"},
            ],
        }
    }
    assert ownership.owner_keys(child, MEMCACHED) == ["ns/m"]
    annotated = {
        "metadata": {
            "annotations": {
                "operator-sdk/primary-resource": "ns/m2",
                "operator-sdk/primary-resource-type": "Memcached.cache.example.com",
            }
        }
    }
    assert ownership.owner_keys(annotated, MEMCACHED) == ["ns/m2"]
    assert ownership.owner_keys(annotated, GVK("other.io", "v1", "Memcached")) == []


def created(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "uid": "c-1", "resourceVersion": "7", **meta}}


def test_adoption_patch_is_pinned_to_the_created_version_and_keeps_other_references() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u-9"}
    patch = ownership.adoption_patch(
        NAMESPACED_OWNER,
        created(ownerReferences=[other]),
        child_namespaced=True,
        child_namespace="ns",
    )
    assert patch == {
        "metadata": {
            "uid": "c-1",
            "resourceVersion": "7",
            "ownerReferences": [other, NAMESPACED_OWNER.reference()],
        }
    }


def test_adoption_patch_uses_annotations_across_namespaces_and_nothing_when_owned() -> None:
    patch = ownership.adoption_patch(
        NAMESPACED_OWNER, created(), child_namespaced=True, child_namespace="other"
    )
    assert patch is not None
    assert patch["metadata"]["annotations"] == NAMESPACED_OWNER.annotations(), patch
    owned = created(ownerReferences=[NAMESPACED_OWNER.reference()])
    patch = ownership.adoption_patch(
        NAMESPACED_OWNER, owned, child_namespaced=True, child_namespace="ns"
    )
    assert patch is None


@pytest.mark.parametrize(
    ("live_meta", "expect_kept"),
    [
        pytest.param({"ownerReferences": [NAMESPACED_OWNER.reference()]}, True, id="owned"),
        pytest.param({"annotations": NAMESPACED_OWNER.annotations()}, True, id="annotated"),
        pytest.param({}, False, id="not-owned"),
        pytest.param(
            {"ownerReferences": [{**NAMESPACED_OWNER.reference(), "uid": "another"}]},
            False,
            id="owned-by-another",
        ),
    ],
)
def test_keep_carries_only_an_existing_mark(live_meta: dict[str, Any], expect_kept: bool) -> None:
    live = {"metadata": {"name": "c", "uid": "c-1", **live_meta}}
    replacement: dict[str, Any] = {"metadata": {"name": "c"}, "data": {"v": "2"}}
    assert ownership.keep(NAMESPACED_OWNER, replacement, live) is expect_kept
    if expect_kept:
        assert NAMESPACED_OWNER.owns(replacement), replacement
        assert replacement["metadata"]["uid"] == "c-1", "a kept mark must pin the live uid"
    else:
        assert replacement == {"metadata": {"name": "c"}, "data": {"v": "2"}}, replacement


def test_keep_refuses_a_replacement_naming_another_object() -> None:
    live = {"metadata": {"uid": "c-1", "ownerReferences": [NAMESPACED_OWNER.reference()]}}
    replacement: dict[str, Any] = {"metadata": {"uid": "c-2"}}
    assert not ownership.keep(NAMESPACED_OWNER, replacement, live)
    assert "ownerReferences" not in replacement["metadata"]
