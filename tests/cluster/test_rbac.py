"""RBAC is enforced: a service account's token is refused until a RoleBinding grants it.

Tokens come from the TokenRequest API (``devcluster.accounts``), as a pod would get.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import devcluster
from devcluster import accounts
from runner.kube import client, config, errors
from runner.kube.types import GVK
from testkit.helpers import wait_for

CONFIG_MAP = GVK("", "v1", "ConfigMap")
ROLE = GVK("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "RoleBinding")


def account_client(cluster: devcluster.Cluster, *, namespace: str, name: str) -> client.Client:
    path = accounts.write_kubeconfig(cluster, namespace=namespace, name=name)
    return client.Client(config.from_kubeconfig(str(path)))


def status_of(call: Callable[[], object]) -> int:
    """The HTTP status a client call ends with: 200 or the ApiError's code."""
    try:
        call()
    except errors.ApiError as exc:
        return exc.status
    return 200


def grant_configmap_reader(kube: client.Client, *, namespace: str, account: str) -> None:
    kube.create(
        ROLE,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "configmap-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
        },
        namespace=namespace,
    )
    kube.create(
        ROLE_BINDING,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "configmap-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "configmap-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
        namespace=namespace,
    )


def test_token_without_binding_is_forbidden(cluster: devcluster.Cluster, namespace: str) -> None:
    sa = account_client(cluster, namespace=namespace, name="reader")

    seen = status_of(lambda: sa.list(CONFIG_MAP, namespace=namespace))

    assert seen == 403, f"expected 403 Forbidden for an unbound service account, saw {seen}"


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        pytest.param("list", 200, id="granted-verb-allowed"),
        pytest.param("create", 403, id="ungranted-verb-still-forbidden"),
    ],
)
def test_rolebinding_grants_exactly_its_rules(
    cluster: devcluster.Cluster, kube: client.Client, namespace: str, verb: str, expected: int
) -> None:
    sa = account_client(cluster, namespace=namespace, name="reader")
    assert status_of(lambda: sa.list(CONFIG_MAP, namespace=namespace)) == 403

    grant_configmap_reader(kube, namespace=namespace, account="reader")

    calls = {
        "list": lambda: sa.list(CONFIG_MAP, namespace=namespace),
        "create": lambda: sa.create(
            CONFIG_MAP,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
            namespace=namespace,
        ),
    }
    # The authorizer learns about new bindings through an informer, so allow a moment.
    if expected == 200:
        wait_for(
            lambda: status_of(calls[verb]), until=lambda s: s == 200, describe=f"{verb} -> 200"
        )
    else:
        wait_for(  # wait until the binding is live, so the 403 below is meaningful
            lambda: status_of(calls["list"]), until=lambda s: s == 200, describe="list -> 200"
        )
        seen = status_of(calls[verb])
        assert seen == expected, f"expected {verb} -> {expected}, saw {seen}"
