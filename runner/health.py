"""``/healthz`` and ``/readyz`` for the kubelet's probes, and the listeners of
every endpoint the runner serves.

healthz answers while the process serves; readyz only once every informer has
finished its first list (the caches are synced) and, under leader election,
regardless of leadership (a standby replica is ready to take over).

:func:`listen` binds an endpoint given by a ``--*-bind-address`` flag; an
address that cannot be served stops the runner with the flag and port named.
"""

from __future__ import annotations

import errno
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runner import errors

log = logging.getLogger("runner.health")

Check = Callable[[], bool]


def parse_bind(address: str, *, default_host: str = "0.0.0.0") -> tuple[str, int] | None:
    """``:8080``, ``127.0.0.1:8080`` → (host, port); ``0`` or empty → disabled (None)."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} out of range")
    return (host or default_host, number)


def listen(
    *,
    flag: str,
    address: str,
    handler: type[BaseHTTPRequestHandler],
    name: str,
    tls: ssl.SSLContext | None = None,
    default_host: str = "0.0.0.0",
) -> ThreadingHTTPServer | None:
    """Serve ``handler`` on the value of ``flag``; None when it disables the endpoint.

    Raises :class:`errors.ListenError` (a start-up error) naming the flag and the
    port when the address is malformed or cannot be bound, e.g. a taken port.
    """
    try:
        bind = parse_bind(address, default_host=default_host)
    except ValueError as exc:
        raise errors.ListenError(
            flag=flag, address=address, problem="expected [host]:port, e.g. :8080"
        ) from exc
    if bind is None:
        return None
    try:
        return serve(bind, handler=handler, name=name, tls=tls)
    except OSError as exc:
        raise errors.ListenError(
            flag=flag, address=address, problem=_bind_problem(exc, *bind)
        ) from exc


def _bind_problem(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use"
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on port {port}"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this host (port {port})"
    if isinstance(exc, socket.gaierror):
        return f"unknown host {host!r} (port {port})"
    return f"cannot listen on port {port}: {exc.strerror or exc}"


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
