"""The proxy's listening socket, bounded: what a local client may cost before it is a run.

Part of the Ansible ↔ API stage (see the package docstring). Any local process can
connect to the proxy; until its token is checked it is a stranger. So a connection
gets :data:`IDLE_TIMEOUT` to start a request and :data:`HEADER_TIMEOUT` to finish
its head (a deadline, not a per-read timeout, so trickling bytes does not extend
it); at most :data:`MAX_CONNECTIONS` are served at once (more are answered 503);
and a body is read only once the handler has checked the token and the announced
length (at most :data:`MAX_BODY`, the API server's own limit), within
:data:`BODY_TIMEOUT`.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HEADER_TIMEOUT = 10.0  # seconds from a request's first byte to the end of its head
IDLE_TIMEOUT = 120.0  # seconds a connection may wait for its next request (Go clients: 90)
BODY_TIMEOUT = 60.0  # seconds to receive a whole request body
MAX_CONNECTIONS = 256  # connections served at once, streams included
MAX_BODY = 3 * 1024 * 1024  # bytes; the API server refuses larger bodies too

_BUSY = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":503,'
    b'"reason":"ServiceUnavailable","message":"too many connections to the API proxy"}'
)
_TURNED_AWAY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY)
)


class Server(ThreadingHTTPServer):
    """A thread per connection, at most :data:`MAX_CONNECTIONS` of them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self._slots.acquire(blocking=False):
            return True
        # Answered from the accepting thread, so without waiting: whatever fits now.
        with contextlib.suppress(OSError):
            request.setblocking(False)
            request.recv(65536)  # what the client sent already, so closing sends no reset
        with contextlib.suppress(OSError):
            request.send(_TURNED_AWAY)
        return False  # the server closes it

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread took the slot
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _HeadReader:
    """The connection's reader, for a request head: every line by one deadline."""

    def __init__(self, reader: io.BufferedReader, sock: socket.socket, deadline: float) -> None:
        self._reader = reader
        self._sock = sock
        self._deadline = deadline

    def readline(self, limit: int = -1) -> bytes:
        line = bytearray()
        while limit < 0 or len(line) < limit:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("request head not received in time")
            self._sock.settimeout(remaining)
            available = self._reader.peek(1)  # at most one read from the socket
            if not available:
                break
            end = available.find(b"\n")
            take = end + 1 if end >= 0 else len(available)
            if limit >= 0:
                take = min(take, limit - len(line))
            line += self._reader.read(take)
            if line.endswith(b"\n"):
                break
        return bytes(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


class BoundedHandler(BaseHTTPRequestHandler):
    """Reads request heads by a deadline; subclasses read bodies with :meth:`read_body`."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self._reader: io.BufferedReader = self.rfile  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        self.rfile = self._reader
        self.connection.settimeout(IDLE_TIMEOUT)
        try:
            started = self._reader.peek(1)
        except OSError:  # idle too long, or reset
            started = b""
        if not started:
            self.close_connection = True
            return
        deadline = time.monotonic() + HEADER_TIMEOUT
        self.rfile = _HeadReader(self._reader, self.connection, deadline)  # type: ignore[assignment]
        try:
            super().handle_one_request()  # do_* restore the plain reader first
        finally:
            self.rfile = self._reader

    def begin_body(self) -> None:
        """The head is in: later reads are the body's (or the stream's)."""
        self.rfile = self._reader
        self.connection.settimeout(IDLE_TIMEOUT)  # also bounds writes to a stalled client

    def read_body(self, length: int) -> bytes:
        """Exactly ``length`` bytes within :data:`BODY_TIMEOUT`; TimeoutError or
        ConnectionError otherwise."""
        deadline = time.monotonic() + BODY_TIMEOUT
        body = bytearray()
        while len(body) < length:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("request body not received in time")
            self.connection.settimeout(remaining)
            chunk = self._reader.read1(length - len(body))
            if not chunk:
                raise ConnectionError("the client closed the connection inside its body")
            body += chunk
        self.connection.settimeout(IDLE_TIMEOUT)
        return bytes(body)
