"""The proxy's listener is bounded: slow or idle clients are dropped, connections are capped,
bodies are limited, and nothing is read from a client before its run token is known."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import pytest

from runner import proxy
from runner.proxy import acceptor
from testkit.helpers import wait_for
from tests.proxy.stand_in import OWNER, StandIn, closed_by_peer, raw, stand_in_proxy
from tests.proxy.support import server_and_token


@pytest.fixture
def api() -> StandIn:
    return StandIn()


@pytest.fixture
def bounded_proxy(api: StandIn, monkeypatch: pytest.MonkeyPatch) -> Iterator[proxy.OwnerProxy]:
    """A proxy with short timeouts and a cap of 3 connections, in front of the stand-in."""
    monkeypatch.setattr(acceptor, "HEADER_TIMEOUT", 0.5)
    monkeypatch.setattr(acceptor, "IDLE_TIMEOUT", 0.5)
    monkeypatch.setattr(acceptor, "MAX_CONNECTIONS", 3)
    yield from stand_in_proxy(api)


def test_a_body_above_the_limit_is_refused_unread(bounded_proxy: proxy.OwnerProxy) -> None:
    with bounded_proxy.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        # The head announces 4 MiB; no body follows. Reading it would hang.
        answer = raw(
            bounded_proxy.port,
            f"POST /runs/{token}/api/v1/namespaces/ns/configmaps HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {4 << 20}\r\n\r\n".encode(),
        )
    assert answer.status == 413, f"expected 413 for a 4 MiB body, saw {answer.status}"


def test_the_token_is_checked_before_the_body_is_read(bounded_proxy: proxy.OwnerProxy) -> None:
    answer = raw(
        bounded_proxy.port,
        b"POST /runs/not-a-token/api/v1/namespaces/ns/configmaps HTTP/1.1\r\n"
        b"Host: x\r\nContent-Length: 1000\r\n\r\n",
    )
    assert answer.status == 401, f"expected 401 before the body arrives, saw {answer.status}"


@pytest.mark.parametrize(
    "length", [pytest.param("-1", id="negative"), pytest.param("abc", id="not-a-number")]
)
def test_a_bad_content_length_is_answered_400(
    bounded_proxy: proxy.OwnerProxy, api: StandIn, length: str
) -> None:
    with bounded_proxy.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        answer = raw(
            bounded_proxy.port,
            f"POST /runs/{token}/api/v1/namespaces/ns/configmaps HTTP/1.1\r\n"
            f"Host: x\r\nContent-Length: {length}\r\n\r\n".encode(),
        )
    assert answer.status == 400, f"expected 400 for Content-Length {length}, saw {answer.status}"
    assert api.seen == [], f"expected nothing forwarded, the API server saw {api.seen}"


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="idle"),
        pytest.param(b"GET /runs/t/api HTTP/1.1\r\nHost: x\r\n", id="unfinished-head"),
    ],
)
def test_slow_and_idle_clients_are_dropped(bounded_proxy: proxy.OwnerProxy, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", bounded_proxy.port)) as sock:
        sock.sendall(sent)
        wait_for(
            lambda: closed_by_peer(sock),
            describe="the proxy to close a connection that sent no full request head",
            timeout=5,
        )


def test_connections_above_the_cap_are_turned_away(
    bounded_proxy: proxy.OwnerProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acceptor, "IDLE_TIMEOUT", 30.0)  # the 3 held ones must stay
    held = [socket.create_connection(("127.0.0.1", bounded_proxy.port)) for _ in range(3)]
    try:
        with bounded_proxy.for_owner(OWNER) as env:
            _, token = server_and_token(env["KUBECONFIG"])
            try:
                answer = raw(
                    bounded_proxy.port,
                    f"GET /runs/{token}/api/v1/namespaces/ns/configmaps/x HTTP/1.1\r\n"
                    "Host: x\r\n\r\n".encode(),
                )
                seen = f"HTTP {answer.status}"
            except (ConnectionResetError, http.client.RemoteDisconnected):
                seen = "closed"  # the 503 may be lost to the reset of a closed connection
        assert seen in ("HTTP 503", "closed"), f"expected a 4th connection turned away, saw {seen}"
    finally:
        for sock in held:
            sock.close()
