"""A request's method and path name the Kubernetes verb and resource RBAC checks."""

from __future__ import annotations

import pytest

from runner.rbac import rules


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        pytest.param(
            "GET", "/api/v1/namespaces/ns1/configmaps/a", ("", "configmaps", "get", "ns1"), id="get"
        ),
        pytest.param(
            "GET", "/api/v1/namespaces/ns1/configmaps", ("", "configmaps", "list", "ns1"), id="list"
        ),
        pytest.param(
            "GET",
            "/apis/apps/v1/deployments?watch=true&resourceVersion=5",
            ("apps", "deployments", "watch", ""),
            id="watch-all-namespaces",
        ),
        pytest.param(
            "GET",
            "/apis/apps/v1/deployments?watch=false",
            ("apps", "deployments", "list", ""),
            id="watch-false-is-list",
        ),
        pytest.param(
            "GET",
            "/api/v1/watch/namespaces/ns1/pods",
            ("", "pods", "watch", "ns1"),
            id="deprecated-watch-path",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/ns1/configmaps",
            ("", "configmaps", "create", "ns1"),
            id="create",
        ),
        pytest.param(
            "PUT",
            "/apis/apps/v1/namespaces/ns1/deployments/d",
            ("apps", "deployments", "update", "ns1"),
            id="update",
        ),
        pytest.param(
            "PATCH",
            "/apis/apps/v1/namespaces/ns1/deployments/d?dryRun=All",
            ("apps", "deployments", "patch", "ns1"),
            id="patch-dry-run",
        ),
        pytest.param(
            "PATCH",
            "/apis/cache.example.com/v1alpha1/namespaces/ns1/memcacheds/m/status",
            ("cache.example.com", "memcacheds/status", "patch", "ns1"),
            id="status-subresource",
        ),
        pytest.param(
            "DELETE", "/api/v1/namespaces/ns1/pods/p", ("", "pods", "delete", "ns1"), id="delete"
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/ns1/pods?labelSelector=a",
            ("", "pods", "deletecollection", "ns1"),
            id="deletecollection",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/ns1/pods/p/exec",
            ("", "pods/exec", "create", "ns1"),
            id="exec",
        ),
        pytest.param(
            "GET", "/api/v1/namespaces/ns1", ("", "namespaces", "get", ""), id="namespace"
        ),
        pytest.param(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/x",
            ("rbac.authorization.k8s.io", "clusterroles", "get", ""),
            id="cluster-scoped",
        ),
    ],
)
def test_verb_of_request(method: str, path: str, expected: tuple[str, str, str, str]) -> None:
    use = rules.use_of(method, path)
    assert use is not None, f"expected {expected} for {method} {path}, saw None"
    seen = (use.group, use.resource, use.verb, use.namespace)
    assert seen == expected, f"{method} {path}: expected {expected}, saw {seen}"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/version", id="version"),
        pytest.param("/apis", id="discovery"),
        pytest.param("/apis/apps/v1", id="group-discovery"),
        pytest.param("/openapi/v2", id="openapi"),
    ],
)
def test_non_resource_paths_need_no_rule(path: str) -> None:
    assert rules.use_of("GET", path) is None, f"expected no rule for GET {path}"


def test_missing_rule_names_group_resource_verb_and_namespace() -> None:
    use = rules.Use(group="apps", resource="deployments", verb="patch", namespace="ns1")
    assert use.needs() == "apps deployments patch in namespace ns1"
    core = rules.Use(group="", resource="nodes", verb="list", namespace="")
    assert core.needs() == "core nodes list cluster-wide"
