"""``/healthz`` and ``/readyz`` for the kubelet's probes.

healthz answers while the process serves; readyz only once every informer has
finished its first list (the caches are synced) and, under leader election,
regardless of leadership (a standby replica is ready to take over).
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("runner.health")

Check = Callable[[], bool]


def parse_bind(address: str, *, default_host: str = "0.0.0.0") -> tuple[str, int] | None:
    """``:8080``, ``127.0.0.1:8080`` → (host, port); ``0`` or empty → disabled (None)."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return (host or default_host, int(port))


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(
    address: tuple[str, int],
    *,
    handler: type[BaseHTTPRequestHandler],
    name: str,
    tls: ssl.SSLContext | None = None,
) -> ThreadingHTTPServer:
    server = _QuietServer(address, handler)
    if tls is not None:
        # Handshake in the handler thread, so a slow client cannot stall accept().
        server.socket = tls.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    log.info(
        "serving",
        extra={
            "endpoint": name,
            "address": f"{address[0]}:{server.server_port}",
            "scheme": "https" if tls is not None else "http",
        },
    )
    return server


def handler_for(*, ready: Check) -> type[BaseHTTPRequestHandler]:
    class Probe(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.startswith("/healthz"):
                ok = True
            elif self.path.startswith("/readyz"):
                ok = ready()
            else:
                self._answer(404, b"not found\n")
                return
            self._answer(200 if ok else 503, b"ok\n" if ok else b"caches not synced\n")

        def _answer(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the operator's logs

    return Probe
