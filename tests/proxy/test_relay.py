"""What the proxy relays besides the body: streams as they arrive, and the headers clients
act on (``Warning``, ``Retry-After``)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import KubeObject
from tests.proxy.conftest import CONFIGMAP
from tests.proxy.stand_in import OWNER, Answer, StandIn, raw, stand_in_proxy
from tests.proxy.support import call, server_and_token

THROTTLED = Answer(
    status=429,
    body=b'{"kind":"Status","apiVersion":"v1","code":429,"reason":"TooManyRequests"}',
    headers=(
        ("Retry-After", "7"),
        ("Warning", '299 - "first warning"'),
        ("Warning", '299 - "second warning"'),
    ),
)


@pytest.fixture
def throttling_proxy() -> Iterator[proxy.OwnerProxy]:
    yield from stand_in_proxy(StandIn(answer=lambda target: THROTTLED))


def test_retry_after_and_warnings_reach_the_client(throttling_proxy: proxy.OwnerProxy) -> None:
    with throttling_proxy.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        answer = raw(
            throttling_proxy.port,
            f"GET /runs/{token}/api/v1/namespaces/ns/configmaps HTTP/1.1\r\n"
            "Host: x\r\n\r\n".encode(),
        )
        answer.read()
    relayed = (answer.status, answer.headers.get("Retry-After"), answer.headers.get_all("Warning"))
    expected = (429, "7", ['299 - "first warning"', '299 - "second warning"'])
    assert relayed == expected, f"expected {expected}, saw {relayed}"


@pytest.mark.integration
def test_a_field_validation_warning_reaches_the_client(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], owner: KubeObject, namespace: str
) -> None:
    server, _ = running_proxy
    with server.for_owner(owner) as env:
        code, headers, _ = call(
            env["KUBECONFIG"],
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps?fieldValidation=Warn",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "bogus": 1},
        )
    assert code == 201, code
    warning = headers.get("Warning", "")
    assert "unknown field" in warning and "bogus" in warning, (
        f"expected the API server's Warning about the unknown field, saw {headers}"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    "watch",
    [
        # The API server takes any value but "false" and "0" as true; so must the proxy
        # (`watch=true` already streamed).
        pytest.param("/api/v1/namespaces/{ns}/configmaps?watch=True", id="watch-True"),
        pytest.param("/api/v1/watch/namespaces/{ns}/configmaps", id="watch-path"),
    ],
)
def test_a_watch_streams_its_events_as_they_come(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
    watch: str,
) -> None:
    server, _ = running_proxy
    with server.for_owner(owner) as env:
        address, token = server_and_token(env["KUBECONFIG"])
        connection = http.client.HTTPConnection(address.removeprefix("http://"), timeout=5)
        path = watch.format(ns=namespace)
        # The API server holds this watch open for 60 s; its first event is the owner.
        separator = "&" if "?" in path else "?"
        connection.request(
            "GET",
            f"/runs/{token}{path}{separator}fieldSelector=metadata.name%3Downer&timeoutSeconds=60",
            headers={"Accept": "application/json"},
        )
        answer = connection.getresponse()
        try:
            first = json.loads(answer.readline())
        except TimeoutError:
            pytest.fail("expected the first watch event within 5 s, the proxy sent nothing")
        finally:
            connection.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "owner"), first
    assert kube.get(CONFIGMAP, name="owner", namespace=namespace)  # the watch was real
