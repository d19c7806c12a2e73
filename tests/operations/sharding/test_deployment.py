"""config/sharded: the manager as 3 sharded replicas with Lease RBAC and no leader election."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(devcluster.resolve("kubectl")), "kustomize", str(ROOT / "config" / "sharded")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}; saw {len(found)}"
    return found[0]


def test_the_manager_runs_three_sharded_replicas(rendered: list[dict[str, Any]]) -> None:
    deployment = one(rendered, "Deployment", "memcached-operator-controller-manager")
    assert deployment["spec"]["replicas"] == 3, f"expected 3 replicas; saw {deployment['spec']}"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert "--sharded" in args and "--shard-group=memcached-operator" in args, (
        f"expected --sharded and the shard group; saw {args}"
    )
    assert not [a for a in args if a.startswith("--leader-elect")], (
        f"expected no leader election in sharded mode; saw {args}"
    )
    pod_name = next((e for e in container["env"] if e["name"] == "POD_NAME"), None)
    assert pod_name == {
        "name": "POD_NAME",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
    }, f"expected POD_NAME from the downward API; saw {pod_name}"


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        pytest.param("Role", "memcached-operator-leader-election-role", id="role"),
        pytest.param("RoleBinding", "memcached-operator-leader-election-rolebinding", id="binding"),
    ],
)
def test_leader_election_rbac_is_left_out(
    rendered: list[dict[str, Any]], kind: str, name: str
) -> None:
    names = [d["metadata"]["name"] for d in rendered if d["kind"] == kind]
    assert name not in names, f"expected no {kind} {name} in sharded mode; saw {names}"


def test_the_manager_may_do_with_leases_only_what_sharding_needs(
    rendered: list[dict[str, Any]],
) -> None:
    role = one(rendered, "Role", "memcached-operator-shard-lease-role")
    assert role["metadata"]["namespace"] == "memcached-operator-system"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "create", "update", "delete"],
        }
    ], f"expected Lease get/list/create/update/delete only; saw {role['rules']}"
    binding = one(rendered, "RoleBinding", "memcached-operator-shard-lease-rolebinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "memcached-operator-controller-manager",
            "namespace": "memcached-operator-system",
        }
    ], f"expected the manager's ServiceAccount; saw {binding['subjects']}"
