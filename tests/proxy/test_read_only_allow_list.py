"""A read-only proxy (preview, ``rbac --sample``, webhook runs) forwards an allow-list:
reads of resources and API discovery, ``dryRun=All`` writes of resources. Requests
that would reach a workload or a kubelet (``.../proxy``), run something in a pod
(exec, attach, port-forward), mint or check credentials (TokenRequest, TokenReview)
or read other non-resource paths are answered 403 by the proxy itself, GET or dry run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from tests.proxy.support import call

SECRET = GVK("", "v1", "Secret")
CONFIGMAP = GVK("", "v1", "ConfigMap")
TOKEN_REQUEST = {
    "apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenRequest",
    "spec": {"expirationSeconds": 600},
}
TOKEN_REVIEW = {
    "apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenReview",
    "spec": {"token": "x"},
}


@pytest.fixture
def read_only(kube: Client) -> Iterator[proxy.OwnerProxy]:
    server = proxy.OwnerProxy(client=kube, inject_owner=False, read_only=True)
    server.start()
    yield server
    server.shutdown()


REFUSED = [
    pytest.param(("GET", "/api/v1/namespaces/{ns}/pods/web/proxy/", None), id="pods-proxy"),
    pytest.param(
        ("GET", "/api/v1/namespaces/{ns}/pods/web:8080/proxy/x", None), id="pods-port-proxy"
    ),
    pytest.param(
        ("POST", "/api/v1/namespaces/{ns}/pods/web/proxy/x?dryRun=All", {}), id="pods-proxy-dry-run"
    ),
    pytest.param(
        ("GET", "/api/v1/namespaces/{ns}/pods/web/%70roxy/", None), id="pods-proxy-encoded"
    ),
    pytest.param(("GET", "/api/v1/namespaces/{ns}/services/web/proxy/", None), id="services-proxy"),
    pytest.param(("GET", "/api/v1/nodes/{node}/proxy/pods", None), id="nodes-proxy"),
    pytest.param(("GET", "/api/v1/nodes/{node}/proxy/configz", None), id="nodes-proxy-configz"),
    pytest.param(("GET", "/api/v1/namespaces/{ns}/pods/web/exec?command=id", None), id="exec"),
    pytest.param(
        ("POST", "/api/v1/namespaces/{ns}/pods/web/exec?command=id&dryRun=All", {}),
        id="exec-dry-run",
    ),
    pytest.param(("GET", "/api/v1/namespaces/{ns}/pods/web/attach?stdout=1", None), id="attach"),
    pytest.param(
        ("GET", "/api/v1/namespaces/{ns}/pods/web/portforward?ports=80", None), id="portforward"
    ),
    pytest.param(
        ("POST", "/api/v1/namespaces/{ns}/serviceaccounts/default/token?dryRun=All", TOKEN_REQUEST),
        id="token-request-dry-run",
    ),
    pytest.param(
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews?dryRun=All", TOKEN_REVIEW),
        id="token-review-dry-run",
    ),
    pytest.param(("GET", "/logs/", None), id="apiserver-logs"),
    pytest.param(("GET", "/metrics", None), id="apiserver-metrics"),
]


@pytest.mark.parametrize("case", REFUSED)
def test_the_read_only_proxy_refuses_it_itself(
    read_only: proxy.OwnerProxy,
    kube: Client,
    owner: KubeObject,
    namespace: str,
    case: tuple[str, str, Any],
) -> None:
    method, path, body = case
    node = _a_node(kube)
    target = path.format(ns=namespace, node=node)
    with read_only.for_owner(owner) as env:
        code, _, answer = call(env["KUBECONFIG"], method, target, body)
    message = str((answer or {}).get("message", "")) if isinstance(answer, dict) else ""
    assert code == 403 and message.startswith("read-only proxy:"), (
        f"{method} {target}: expected the read-only proxy's own 403, saw {code} "
        f"{message or answer!r:.300}"
    )
    refused = [(w.method, w.path) for w in read_only.refused]
    assert (method, target) in refused, f"expected {method} {target} kept as refused: {refused}"


def test_reads_and_dry_run_writes_still_pass(
    read_only: proxy.OwnerProxy, kube: Client, owner: KubeObject, namespace: str
) -> None:
    # Secrets stay readable: a role's reconcile reads them, so does its preview.
    kube.create(
        SECRET,
        {"metadata": {"name": "creds"}, "stringData": {"password": "p"}},
        namespace=namespace,
    )
    ns = f"/api/v1/namespaces/{namespace}"
    dry_run = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "would-be"}}
    with read_only.for_owner(owner) as env:
        codes = {
            "discovery": call(env["KUBECONFIG"], "GET", "/api/v1")[0],
            "group discovery": call(env["KUBECONFIG"], "GET", "/apis/apps/v1")[0],
            "version": call(env["KUBECONFIG"], "GET", "/version")[0],
            "get": call(env["KUBECONFIG"], "GET", f"{ns}/configmaps/owner")[0],
            "list": call(env["KUBECONFIG"], "GET", f"{ns}/configmaps")[0],
            "get secret": call(env["KUBECONFIG"], "GET", f"{ns}/secrets/creds")[0],
            "status": call(env["KUBECONFIG"], "GET", f"{ns}/status")[0],
            "dry-run create": call(
                env["KUBECONFIG"], "POST", f"{ns}/configmaps?dryRun=All", dry_run
            )[0],
        }
    expected = dict.fromkeys(codes, 200) | {"dry-run create": 201}
    assert codes == expected, f"expected reads and dry runs forwarded: {expected}, saw {codes}"
    persisted = kube.list(
        CONFIGMAP, namespace=namespace, query={"fieldSelector": "metadata.name=would-be"}
    )["items"]
    assert not persisted, f"expected the dry-run create to persist nothing, saw {persisted}"
    assert read_only.refused == [], f"expected nothing refused, saw {read_only.refused}"


def _a_node(kube: Client) -> str:
    nodes = kube.list(GVK("", "v1", "Node"))["items"]
    return str(nodes[0]["metadata"]["name"]) if nodes else "absent-node"
