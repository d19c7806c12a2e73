"""The probe, metrics and custom-metrics listeners are bounded: idle and slow
clients hold no thread, slow heads are cut off, bad or oversize bodies are refused."""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.base.http import connections, http1, listener
from runner.operations import access, health
from runner.operations.metrics import endpoint as metrics_endpoint
from runner.operations.metrics import runtime

IDLE_CONNECTIONS = 300
FAST = connections.Limits(header_timeout=0.5, handshake_timeout=0.5, body_timeout=0.5)


def process_threads() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads: line in /proc/self/status")


Served = tuple[str, int, ssl.SSLContext | None]


@contextlib.contextmanager
def serving(endpoint: str, *, limits: connections.Limits | None = None) -> Iterator[Served]:
    """One listener as the manager makes it: (path to GET or POST, port, client TLS context)."""
    owner = runtime.Metrics()
    tls = None
    client_tls = None
    if endpoint == "probe":
        app, path = health.handler_for(ready=lambda: True), "/healthz"
    elif endpoint == "custom":
        app, path = metrics_endpoint.custom_handler(owner), "/metrics"
    else:
        app, path = metrics_endpoint.exposition_handler(owner), "/metrics"
        if endpoint == "metrics-tls":
            tls = access.server_context(None)
            client_tls = ssl.create_default_context()
            client_tls.check_hostname = False
            client_tls.verify_mode = ssl.CERT_NONE
    if limits is not None:
        app = listener.App(handle=app.handle, authorize=app.authorize, limits=limits)
    server = health.serve(("127.0.0.1", 0), handler=app, name=endpoint, tls=tls)
    try:
        yield path, server.server_port, client_tls
    finally:
        server.shutdown()


def get(port: int, path: str, tls: ssl.SSLContext | None) -> int:
    scheme = "https" if tls else "http"
    try:
        with urllib.request.urlopen(
            f"{scheme}://127.0.0.1:{port}{path}", timeout=5, context=tls
        ) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def exchange(port: int, request: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``request`` raw and read until the server closes or ``wait`` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(request)
        received = b""
        deadline = time.monotonic() + wait
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while time.monotonic() < deadline:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                received += chunk
                if b"\r\n\r\n" in received and b"Connection: close" not in received:
                    break  # an answer on a kept-alive connection
        return received


def status_of(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode(errors="replace")


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param("probe", id="probe"),
        pytest.param("metrics", id="metrics"),
        pytest.param("metrics-tls", id="secure-metrics"),
    ],
)
def test_idle_connections_hold_no_thread_and_probes_still_answer(endpoint: str) -> None:
    with serving(endpoint) as (path, port, tls):
        before = process_threads()
        idle: list[socket.socket] = []
        try:
            for _ in range(IDLE_CONNECTIONS):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            started = time.monotonic()
            code = get(port, path, tls)
            seconds = time.monotonic() - started
            # The listen backlog is first in, first out: by now every idle one was accepted.
            grown = process_threads() - before
        finally:
            for conn in idle:
                conn.close()
    assert code == 200 and seconds < 2, (
        f"expected 200 at once beside {IDLE_CONNECTIONS} idle connections, "
        f"saw {code} after {seconds:.2f}s"
    )
    bound = 1 + connections.Limits().workers
    assert grown <= bound, (
        f"expected at most {bound} more threads with {IDLE_CONNECTIONS} idle connections, "
        f"saw {grown} more"
    )


def test_a_head_that_never_ends_is_closed_after_the_header_timeout() -> None:
    with serving("probe", limits=FAST) as (_path, port, _tls):
        started = time.monotonic()
        answer = exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", wait=5)
        seconds = time.monotonic() - started
    assert answer == b"" and seconds < 3, (
        f"expected the connection closed after the {FAST.header_timeout}s header timeout, "
        f"saw {answer[:60]!r} after {seconds:.2f}s"
    )


def test_a_tls_handshake_that_never_ends_is_closed() -> None:
    with serving("metrics-tls", limits=FAST) as (_path, port, _tls):
        started = time.monotonic()
        answer = exchange(port, b"\x16\x03\x01", wait=5)  # the start of a ClientHello
        seconds = time.monotonic() - started
    assert answer == b"" and seconds < 3, (
        f"expected the connection closed after the {FAST.handshake_timeout}s handshake "
        f"timeout, saw {answer[:60]!r} after {seconds:.2f}s"
    )


def with_length(method: str, path: str, length: str) -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()


@pytest.mark.parametrize(
    ("endpoint", "method", "length"),
    [
        pytest.param("probe", "GET", "-1", id="probe-negative"),
        pytest.param("probe", "GET", "abc", id="probe-not-a-number"),
        pytest.param("custom", "POST", "-5", id="custom-negative"),
        pytest.param("custom", "POST", "12x", id="custom-not-a-number"),
        pytest.param("custom", "POST", "3, 4", id="custom-two-lengths"),
        pytest.param("metrics", "GET", "1e3", id="metrics-exponent"),
    ],
)
def test_a_bad_content_length_gets_400(endpoint: str, method: str, length: str) -> None:
    with serving(endpoint) as (path, port, _tls):
        answer = exchange(port, with_length(method, path, length))
    assert status_of(answer).startswith("HTTP/1.1 400"), (
        f"expected 400 for Content-Length {length!r}, saw {status_of(answer)!r}"
    )


@pytest.mark.parametrize(
    ("endpoint", "method"),
    [
        pytest.param("probe", "GET", id="probe"),
        pytest.param("custom", "POST", id="custom-metrics"),
        pytest.param("metrics", "GET", id="metrics"),
    ],
)
def test_an_oversize_body_gets_413_without_being_read(endpoint: str, method: str) -> None:
    with serving(endpoint) as (path, port, _tls):
        started = time.monotonic()
        # Announces 10 MiB and sends none of it: an answer now means it was not waited for.
        answer = exchange(port, with_length(method, path, str(10 * 1024 * 1024)))
        seconds = time.monotonic() - started
    assert status_of(answer).startswith("HTTP/1.1 413") and seconds < 2, (
        f"expected 413 at once for a 10 MiB body, saw {status_of(answer)!r} after {seconds:.2f}s"
    )


def test_a_body_within_the_limit_is_read_and_kept_alive_requests_follow() -> None:
    payload = b'{"name": "things", "description": "d", "counter": {"increment": true}}'
    request = (
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    answers = []
    with (
        serving("custom") as (_path, port, _tls),
        socket.create_connection(("127.0.0.1", port), timeout=5) as conn,
    ):
        for _ in range(2):  # the same connection twice: kept alive
            conn.sendall(request)
            answers.append(status_of(conn.recv(65536)))
    assert answers == ["HTTP/1.1 200 OK"] * 2, f"expected two 200 answers, saw {answers}"


def test_authorization_runs_before_the_body_is_read() -> None:
    seen: list[str] = []

    def authorize(request: http1.Request) -> http1.Response | None:
        seen.append(request.headers.get("authorization", ""))
        return http1.text(401, "unauthorized")

    app = listener.App(handle=lambda request: http1.text(200, "ok"), authorize=authorize)
    server = listener.serve(("127.0.0.1", 0), app=app, name="authorized")
    try:
        started = time.monotonic()
        answer = exchange(
            server.server_port,
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
            b"Content-Length: 100\r\n\r\n",
        )
        seconds = time.monotonic() - started
    finally:
        server.shutdown()
    assert status_of(answer).startswith("HTTP/1.1 401") and seconds < 2, (
        f"expected 401 before the 100-byte body arrived, saw {status_of(answer)!r} "
        f"after {seconds:.2f}s"
    )
    assert seen == ["Bearer t"], f"expected one authorization of 'Bearer t', saw {seen}"


def test_the_connection_cap_evicts_the_oldest_idle_connection() -> None:
    limits = connections.Limits(max_connections=4)
    app = listener.App(handle=lambda request: http1.text(200, "ok"), limits=limits)
    server = listener.serve(("127.0.0.1", 0), app=app, name="capped")
    idle = [
        socket.create_connection(("127.0.0.1", server.server_port), timeout=5) for _ in range(8)
    ]
    try:
        answer = exchange(server.server_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        open_now = server.connections()
    finally:
        for conn in idle:
            conn.close()
        server.shutdown()
    assert status_of(answer) == "HTTP/1.1 200 OK", f"expected 200, saw {status_of(answer)!r}"
    assert open_now <= limits.max_connections, (
        f"expected at most {limits.max_connections} connections open, saw {open_now}"
    )


def test_a_request_whose_sender_half_closed_is_still_answered() -> None:
    with (
        serving("probe") as (_path, port, _tls),
        socket.create_connection(("127.0.0.1", port), timeout=5) as conn,
    ):
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert status_of(answer) == "HTTP/1.1 200 OK" and answer.endswith(b"ok\n"), (
        f"expected 200 ok and the connection closed, saw {answer!r}"
    )
