"""--metrics-secure and --metrics-require-rbac: HTTPS, and only RBAC-allowed scrapers."""

from __future__ import annotations

import pytest

import devcluster
from devcluster import accounts
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import harness
from testkit.helpers import unique_name
from tests.runner.support import StartOperator, probe_watches

pytestmark = pytest.mark.integration

CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


def scrape(url: str, token: str | None) -> int:
    code, body = harness.scrape(url, token=token)
    if code == 200:
        assert "playbook_operator_build_info" in body, body[:300]
    return code


def test_only_rbac_allowed_scrapers_read_metrics(
    cluster: devcluster.Cluster, kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches(), args=("--metrics-secure", "--metrics-require-rbac"))
    address = operator.address("metrics")
    assert operator.logged("serving", endpoint="metrics", scheme="https"), operator.tail()
    url = f"https://{address}/metrics"

    accounts.ensure(cluster, namespace=namespace, name="scraper")
    token = accounts.mint_token(cluster, namespace=namespace, name="scraper")
    assert scrape(url, None) == 401, "no token must be refused"
    assert scrape(url, "not-a-token") == 401, "an invalid token must be refused"
    assert scrape(url, token) == 403, "a token without RBAC must be forbidden"

    reader = unique_name("metrics-reader")
    kube.create(
        CLUSTER_ROLE,
        {
            "metadata": {"name": reader},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    try:
        kube.create(
            CLUSTER_ROLE_BINDING,
            {
                "metadata": {"name": reader},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": reader,
                },
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
            },
        )
        # A fresh token: the forbidden answer for the first one is cached for a minute.
        allowed = accounts.mint_token(cluster, namespace=namespace, name="scraper")
        assert scrape(url, allowed) == 200, "a token bound to metrics-reader must be served"
    finally:
        kube.delete(CLUSTER_ROLE_BINDING, name=reader)
        kube.delete(CLUSTER_ROLE, name=reader)
