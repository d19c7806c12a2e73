"""The runner's listeners tell their apps who is asking: the request's remote host."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from runner.base.http import http1, listener
from runner.operations import health, peers


@pytest.fixture
def echo() -> Iterator[listener.Server]:
    """A listener (as the runner's endpoints are served) answering with the peer it sees
    in authorize and in handle."""
    seen: list[str] = []

    def authorize(request: http1.Request) -> http1.Response | None:
        seen.append(peers.current())
        return None

    def handle(request: http1.Request) -> http1.Response:
        return http1.text(200, f"{seen[-1]} {peers.current()}")

    app = listener.App(handle=handle, authorize=authorize)
    server = health.serve(("127.0.0.1", 0), handler=app, name="echo")
    yield server
    server.shutdown()


@pytest.mark.parametrize(
    "source", [pytest.param("127.0.0.1", id="one"), pytest.param("127.0.0.9", id="another")]
)
def test_workers_see_the_clients_address(echo: listener.Server, source: str) -> None:
    connection = http.client.HTTPConnection(
        "127.0.0.1", echo.server_port, timeout=10, source_address=(source, 0)
    )
    try:
        connection.request("GET", "/")
        body = connection.getresponse().read().decode().strip()
    finally:
        connection.close()
    assert body == f"{source} {source}", (
        f"expected authorize and handle to see {source}, saw {body!r}"
    )
    assert peers.current() == "", f"expected no peer outside a request, saw {peers.current()!r}"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="v4"),
        pytest.param("127.3.2.1", True, id="v4-any-127"),
        pytest.param("::1", True, id="v6"),
        pytest.param("::ffff:127.0.0.1", True, id="v4-mapped"),
        pytest.param("192.0.2.7", False, id="remote-v4"),
        pytest.param("::ffff:192.0.2.7", False, id="remote-v4-mapped"),
        pytest.param("fe80::1%eth0", False, id="link-local-scoped"),
        pytest.param("", False, id="unknown"),
        pytest.param("localhost", False, id="a-name"),
    ],
)
def test_loopback_is_told_from_the_address(host: str, loopback: bool) -> None:
    seen = peers.is_loopback(host)
    assert seen is loopback, f"{host!r}: expected loopback={loopback}, saw {seen}"
