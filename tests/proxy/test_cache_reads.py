"""Reads through the proxy: which go to the API server, and the debug line that says why.

ansible-operator logs "Skipping cache lookup" for reads it sends to the API server
without asking its cache (blacklisted kinds, subresources, ...); people grep for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, Resource
from tests.proxy.conftest import CONFIGMAP
from tests.proxy.support import call

pytestmark = pytest.mark.integration

SECRET = GVK("", "v1", "Secret")
SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")


@pytest.fixture
def caching_proxy(kube: Client) -> Iterator[proxy.OwnerProxy]:
    """A proxy whose cache holds ConfigMaps and ServiceAccounts (empty), for a ConfigMap
    owner whose watch blacklists Secrets."""
    held = {CONFIGMAP, SERVICE_ACCOUNT, SECRET}

    def lookup(resource: Resource, namespace: str, name: str) -> KubeObject | None:
        return None

    server = proxy.OwnerProxy(
        client=kube,
        cache=lookup,
        caches=lambda gvk: gvk in held,
        blacklists={CONFIGMAP: frozenset({SECRET})},
    )
    server.start()
    yield server
    server.shutdown()


SKIP = "Skipping cache lookup"


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(("secrets/s", SKIP, "blacklisted"), id="blacklisted"),
        pytest.param(("pods/p", SKIP, "kind not cached"), id="uncached-kind"),
        pytest.param(("pods/p/log", SKIP, "subresource log"), id="subresource"),
        pytest.param(("configmaps", SKIP, "list"), id="list"),
        pytest.param(("serviceaccounts/nobody", "Cache miss", "cache miss"), id="miss"),
    ],
)
def test_reads_sent_to_the_api_server_say_why(
    caching_proxy: proxy.OwnerProxy,
    owner: KubeObject,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
    read: tuple[str, str, str],
) -> None:
    path, message, reason = read
    caplog.set_level(logging.DEBUG - 1, logger="runner.proxy")  # --zap-log-level=2
    with caching_proxy.for_owner(owner) as env:
        code, headers, _ = call(env["KUBECONFIG"], "GET", f"/api/v1/namespaces/{namespace}/{path}")
    assert "X-Cache" not in headers, f"expected the API server to answer, saw {headers}"
    assert code in (200, 404), f"expected the API server's answer, saw {code}"
    lines = [
        (r.getMessage(), getattr(r, "reason", None), getattr(r, "resource", {}).get("Path"))
        for r in caplog.records
        if r.name == "runner.proxy"
    ]
    expected = (message, reason, f"/api/v1/namespaces/{namespace}/{path}")
    assert expected in lines, f"expected the debug line {expected}, saw {lines}"
