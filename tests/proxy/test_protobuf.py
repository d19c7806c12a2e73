"""Protobuf, and any body the proxy need not read, passes through it unchanged.

Against the real API server: a protobuf GET and LIST through a run's proxy answer
the same bytes as the API server does directly, also when the runner's cache holds
the object (the cache holds JSON, which a protobuf-only client cannot read); a
protobuf create passes through as it was sent. Its owner reference cannot be added
(the proxy does not decode protobuf): the child is created without one, as the
proxy's docs say, and the proxy logs that.
"""

from __future__ import annotations

import logging
import urllib.request
from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import KubeObject
from tests.proxy.conftest import CONFIGMAP
from tests.proxy.support import server_and_token

pytestmark = pytest.mark.integration

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2); every length here is < 128."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def protobuf_configmap(name: str, data: dict[str, str]) -> bytes:
    """A v1 ConfigMap in Kubernetes' protobuf envelope (``k8s\\0`` + runtime.Unknown)."""
    meta = _field(1, name.encode())  # ObjectMeta.name
    entries = b"".join(
        _field(2, _field(1, key.encode()) + _field(2, value.encode()))  # ConfigMap.data
        for key, value in data.items()
    )
    configmap = _field(1, meta) + entries
    type_meta = _field(1, b"v1") + _field(2, b"ConfigMap")
    return b"k8s\x00" + _field(1, type_meta) + _field(2, configmap)


def through(
    kubeconfig: str, method: str, path: str, *, body: bytes | None = None, accept: str = PROTOBUF
) -> tuple[int, str, bytes]:
    """(status, Content-Type, raw answer) of one request through the run's proxy."""
    server, token = server_and_token(kubeconfig)
    headers = {"Authorization": f"Bearer {token}", "Accept": accept}
    if body is not None:
        headers["Content-Type"] = PROTOBUF
    request = urllib.request.Request(server + path, method=method, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status, answer.headers.get("Content-Type", ""), answer.read()


def direct(kube: Client, path: str) -> tuple[int, str, bytes]:
    response = kube.forward("GET", path, body=None, headers={"Accept": PROTOBUF}, read_timeout=10)
    try:
        return response.status, response.headers.get("Content-Type", ""), response.read()
    finally:
        response.release_conn()


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/v1/namespaces/{ns}/configmaps/owner", id="get"),
        pytest.param("/api/v1/namespaces/{ns}/configmaps", id="list"),
    ],
)
def test_protobuf_reads_answer_the_api_servers_bytes(
    path: str,
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    namespace: str,
    kube: Client,
) -> None:
    server, _ = running_proxy
    path = path.format(ns=namespace)
    want = direct(kube, path)
    assert want[0] == 200 and want[1] == PROTOBUF, f"the API server answered {want[:2]}"
    assert want[2].startswith(b"k8s\x00"), want[2][:16]
    with server.for_owner(owner) as env:
        seen = through(env["KUBECONFIG"], "GET", path)
    assert seen == want, (
        f"expected the API server's {len(want[2])} bytes, saw {seen[:2]} {seen[2][:64]!r}"
    )


def test_protobuf_get_is_not_answered_from_the_json_cache(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    namespace: str,
    kube: Client,
) -> None:
    server, _ = running_proxy
    server.cached[(namespace, "owner")] = owner  # type: ignore[attr-defined]
    path = f"/api/v1/namespaces/{namespace}/configmaps/owner"
    want = direct(kube, path)
    with server.for_owner(owner) as env:
        seen = through(env["KUBECONFIG"], "GET", path)
        _, content_type, _ = through(env["KUBECONFIG"], "GET", path, accept="application/json")
    assert seen == want, f"a protobuf-only client got {seen[:2]} {seen[2][:64]!r}"
    assert content_type == "application/json", f"a JSON client got {content_type}"


def test_protobuf_create_passes_through_without_an_owner(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    namespace: str,
    kube: Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = running_proxy
    body = protobuf_configmap("from-protobuf", {"sent": "as protobuf"})
    with caplog.at_level(logging.INFO, logger="runner.proxy"), server.for_owner(owner) as env:
        status, content_type, answer = through(
            env["KUBECONFIG"], "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=body
        )
    assert (status, content_type) == (201, PROTOBUF), (status, content_type, answer[:64])
    assert answer.startswith(b"k8s\x00"), answer[:16]
    created = kube.get(CONFIGMAP, name="from-protobuf", namespace=namespace)
    assert created.get("data") == {"sent": "as protobuf"}, created
    assert not created["metadata"].get("ownerReferences"), (
        f"the proxy cannot mark a protobuf body, yet saw {created['metadata']}"
    )
    logged = [record.getMessage() for record in caplog.records]
    assert "owner mark not applied: the body is not JSON" in logged, (
        f"expected a log line that the owner was not added, saw {logged}"
    )
