"""The relay that lets the real node's pods reach the loopback-only apiserver
(``python -m devcluster.relay``, started by ``up --node real`` on the bridge's address)
copies bytes both ways, passes a half-close on, and refuses connections past its bound.

Run here on 127.0.0.1 in front of a small echo server; needs no cluster.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from devcluster import ports, relay
from testkit.helpers import wait_for


@pytest.fixture
def echo_port() -> Iterator[int]:
    """An echo server on 127.0.0.1 that answers once its client half-closes."""
    server = socket.create_server(("127.0.0.1", 0), backlog=512)

    def answer(conn: socket.socket) -> None:
        with conn:
            received = b""
            while chunk := conn.recv(4096):
                received += chunk
            conn.sendall(received.upper())

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    server.close()


@pytest.fixture
def relay_port(echo_port: int) -> Iterator[int]:
    port = ports.any_free()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "devcluster.relay",
            f"--listen=127.0.0.1:{port}",
            f"--target=127.0.0.1:{echo_port}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert "relaying" in first, f"expected the relay to say it listens, saw {first!r}"
    yield port
    process.terminate()
    assert process.wait(timeout=10) == 0, "expected the relay to exit 0 on SIGTERM"


def exchange(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as conn:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)  # the echo server answers at end of input
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    return reply


def turned_away(port: int) -> bool:
    """Whether a connection is closed (or reset) without an answer."""
    try:
        return exchange(port, b"over the bound") == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"hello", id="short"),
        pytest.param(b"x" * 300_000, id="larger-than-a-read"),
    ],
)
def test_bytes_cross_both_ways_and_a_half_close_passes_on(relay_port: int, payload: bytes) -> None:
    reply = exchange(relay_port, payload)
    assert reply == payload.upper(), f"expected {len(payload)} echoed bytes, saw {len(reply)}"


def test_connections_past_the_bound_are_closed(relay_port: int) -> None:
    # Hold MAX_CONNECTIONS open connections, then one more must be closed without data.
    held = [
        socket.create_connection(("127.0.0.1", relay_port), timeout=5.0)
        for _ in range(relay.MAX_CONNECTIONS)
    ]
    try:
        for conn in held:
            conn.sendall(b"a")  # each is relayed: the relay counts it as open
        wait_for(
            lambda: turned_away(relay_port),
            describe=f"connection {relay.MAX_CONNECTIONS + 1} closed without an answer",
        )
    finally:
        for conn in held:
            conn.close()
    wait_for(
        lambda: exchange(relay_port, b"again"),
        until=lambda reply: reply == b"AGAIN",
        describe="the relay serving again once the held connections closed",
        ignore=(OSError,),
    )
