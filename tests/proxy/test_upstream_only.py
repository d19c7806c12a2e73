"""The proxy sends the operator's credentials to its API server and nowhere else.

A request target is appended to the API server's URL; a target that is not a plain
API path (``@host:port/...``, an absolute URL, ``//host/...``) could make that URL
name another host. Such targets are answered 400, and a second listener standing
in for "another host" must never see a request.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runner import proxy
from tests.proxy.stand_in import OWNER, StandIn, raw, stand_in_proxy
from tests.proxy.support import server_and_token


@pytest.fixture
def api() -> StandIn:
    return StandIn()


@pytest.fixture
def elsewhere() -> Iterator[StandIn]:
    other = StandIn()
    other.start()
    yield other
    other.stop()


@pytest.fixture
def guarded_proxy(api: StandIn) -> Iterator[proxy.OwnerProxy]:
    yield from stand_in_proxy(api)


TARGETS = [
    pytest.param("@127.0.0.1:{port}/api/v1/namespaces", False, id="userinfo-bearer"),
    pytest.param("http://127.0.0.1:{port}/api/v1/namespaces", False, id="absolute-url"),
    pytest.param("//127.0.0.1:{port}/api/v1/namespaces", False, id="network-path"),
    pytest.param("/runs/{token}@127.0.0.1:{port}/api/v1/namespaces", True, id="userinfo-runs"),
    pytest.param("/runs/{token}/@127.0.0.1:{port}/api/v1/namespaces", True, id="runs-then-at"),
    pytest.param("/runs/{token}//127.0.0.1:{port}/api/v1/namespaces", True, id="runs-then-slash"),
    pytest.param("/runs/{token}", True, id="runs-without-path"),
]


@pytest.mark.parametrize(("target", "in_path"), TARGETS)
def test_targets_other_than_an_api_path_are_refused(
    guarded_proxy: proxy.OwnerProxy, api: StandIn, elsewhere: StandIn, target: str, in_path: bool
) -> None:
    with guarded_proxy.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        request_target = target.format(port=elsewhere.port, token=token)
        auth = "" if in_path else f"Authorization: Bearer {token}\r\n"
        answer = raw(
            guarded_proxy.port,
            f"GET {request_target} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode(),
        )
        answer.read()
    assert elsewhere.connections == 0, (
        f"expected no connection to another host, it saw {elsewhere.connections}: "
        f"{[(m, p, h.get('Authorization')) for m, p, h in elsewhere.seen]}"
    )
    assert answer.status == 400, f"expected 400 for {request_target!r}, saw {answer.status}"
    assert api.seen == [], f"expected nothing forwarded, the API server saw {api.seen}"


def test_upgrade_requests_carry_only_the_stream_headers(
    guarded_proxy: proxy.OwnerProxy, api: StandIn
) -> None:
    """exec/attach/port-forward go with the operator's credentials: no Impersonate-* rides along."""
    with guarded_proxy.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        answer = raw(
            guarded_proxy.port,
            f"POST /runs/{token}/api/v1/namespaces/ns/pods/p/exec?command=true HTTP/1.1\r\n"
            "Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
            "Impersonate-User: system:admin\r\nImpersonate-Group: system:masters\r\n\r\n".encode(),
        )
        answer.read()
    sent = [{k.lower(): v for k, v in headers.items()} for _, _, headers in api.seen]
    assert len(sent) == 1, f"expected the upgrade request forwarded once, saw {api.seen}"
    impersonating = sorted(k for k in sent[0] if k.startswith("impersonate-"))
    assert impersonating == [], f"expected no Impersonate-* headers forwarded, saw {impersonating}"
    assert sent[0].get("sec-websocket-protocol") == "v5.channel.k8s.io", sent[0]
