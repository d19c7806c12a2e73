"""The relay the fencing tests (and the chaos benchmark) put between a runner and the
API server: bytes pass, stop while frozen, pass again when thawed; a reset drops the
open connections (RST) and keeps the port."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from testkit import relay as relay_mod


@pytest.fixture
def echo() -> Iterator[int]:
    """A loopback echo server; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def roundtrip(conn: socket.socket, data: bytes) -> bytes:
    conn.sendall(data)
    return conn.recv(4096)


def test_freeze_thaw_and_reset(echo: int) -> None:
    with relay_mod.Relay(target_host="127.0.0.1", target_port=echo) as relay:
        conn = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        assert roundtrip(conn, b"one") == b"one", "expected bytes through the relay"

        relay.freeze()
        conn.settimeout(0.5)
        with pytest.raises(TimeoutError):
            roundtrip(conn, b"two")  # the connection stays open, the bytes stop
        relay.thaw()
        conn.settimeout(5)
        assert conn.recv(4096) == b"two", "expected the held bytes to pass once thawed"

        relay.reset()
        with pytest.raises(ConnectionError):  # reset by the relay (RST), not closed
            roundtrip(conn, b"three")
        again = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        assert roundtrip(again, b"four") == b"four", "expected the same port to relay again"
        again.close()
        conn.close()
