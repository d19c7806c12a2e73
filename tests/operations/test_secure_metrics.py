"""--metrics-secure and --metrics-require-rbac: HTTPS, and only RBAC-allowed scrapers."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import pytest

import devcluster
from devcluster import accounts
from runner.kube.client import Client
from runner.kube.types import GVK
from tests.helpers import unique_name
from tests.runner.support import StartOperator

pytestmark = pytest.mark.integration

WATCHES = """\
- version: v1
  group: tests.playbook-operator.dev
  kind: Probe
  role: probe
"""
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


def scrape(url: str, token: str | None) -> int:
    # The certificate is self-signed; what is under test is who gets an answer.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            body = answer.read().decode()
            assert "playbook_operator_build_info" in body, body[:300]
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_only_rbac_allowed_scrapers_read_metrics(
    cluster: devcluster.Cluster, kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(WATCHES, args=("--metrics-secure", "--metrics-require-rbac"))
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
