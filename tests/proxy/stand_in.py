"""A stand-in API server and raw HTTP calls, for the proxy's tests of its listener and relay.

The embedded cluster cannot be told to answer 429, to hang, or to send a request
somewhere else; this plain-HTTP stand-in can, and it records every request it
receives, so a test can also assert that nothing arrived. ``raw`` sends request
lines that ordinary clients refuse to build (``GET @host:port/...``).
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runner import proxy
from runner.kube.client import Client
from runner.kube.config import ClientConfig

OPERATOR_TOKEN = "operator-secret"  # the stand-in cluster's credentials, as the runner holds them


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b'{"kind":"Status","apiVersion":"v1"}'
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class StandIn:
    """A listener that records requests (method, target, headers) and answers ``answer``."""

    answer: Callable[[str], Answer] = lambda target: Answer()
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    connections: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def start(self) -> None:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                stand_in.connections += 1
                super().setup()

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                stand_in.seen.append((self.command, self.path, dict(self.headers.items())))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                answer = stand_in.answer(self.path)
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                for key, value in answer.headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        server = self.server
        threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), daemon=True
        ).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def stand_in_proxy(api: StandIn) -> Iterator[proxy.OwnerProxy]:
    """A proxy whose API server is ``api`` (started), for fixtures to yield from."""
    api.start()
    config = ClientConfig(server=f"http://127.0.0.1:{api.port}", token=OPERATOR_TOKEN)
    server = proxy.OwnerProxy(client=Client(config))
    server.start()
    try:
        yield server
    finally:
        server.shutdown()
        api.stop()


OWNER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "owner", "namespace": "ns", "uid": "u-1"},
}


def raw(port: int, request: bytes, *, timeout: float = 5.0) -> http.client.HTTPResponse:
    """Send ``request`` as is and read the answer's head (its body stays readable)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(request)
    answer = http.client.HTTPResponse(sock)
    answer.begin()
    return answer


def closed_by_peer(sock: socket.socket) -> bool:
    """True once the other side closed ``sock`` (nothing more to read), False while it is open."""
    sock.settimeout(0.05)
    try:
        return sock.recv(65536) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
