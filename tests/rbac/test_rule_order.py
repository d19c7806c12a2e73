"""Rules come out as controller-gen writes them: by group, then resource, verbs sorted."""

from __future__ import annotations

import yaml

from runner.rbac import rules


def _use(group: str, resource: str, verb: str, namespace: str = "ns1") -> rules.Use:
    return rules.Use(group=group, resource=resource, verb=verb, namespace=namespace)


def test_rules_sorted_by_group_then_resource_with_sorted_verbs() -> None:
    uses = [
        _use("apps", "deployments", "patch"),
        _use("", "services", "get"),
        _use("apps", "deployments", "get"),
        _use("", "configmaps", "watch"),
        _use("", "configmaps", "create", namespace="ns2"),
        _use("cache.example.com", "memcacheds/status", "patch"),
        _use("cache.example.com", "memcacheds", "list"),
        _use("", "configmaps", "create"),
    ]
    seen = [(r.group, r.resource, r.verbs) for r in rules.rules_of(uses)]
    expected = [
        ("", "configmaps", ("create", "watch")),
        ("", "services", ("get",)),
        ("apps", "deployments", ("get", "patch")),
        ("cache.example.com", "memcacheds", ("list",)),
        ("cache.example.com", "memcacheds/status", ("patch",)),
    ]
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_rendered_role_is_the_yaml_of_the_rules() -> None:
    text = rules.render(rules.rules_of([_use("apps", "deployments", "get")]), name="manager-role")
    assert yaml.safe_load(text) == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "manager-role"},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}],
    }


def test_wildcards_cover_what_they_name() -> None:
    grants = rules.granted(
        {"rules": [{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get", "list"]}]}
    )
    assert rules.covers(grants, ("apps", "deployments", "get"))
    assert not rules.covers(grants, ("apps", "deployments", "patch"))
    assert not rules.covers(grants, ("", "deployments", "get"))
