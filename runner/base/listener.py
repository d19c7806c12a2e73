"""Bounded HTTP/1.1 listeners: the probes, ``/metrics`` and the custom-metrics endpoint.

These ports are reachable from other pods, so no client may hold a thread or
unbounded memory by connecting and staying silent. One selector thread owns
every connection while it handshakes (TLS), sends its request head or body, or
receives its answer: an idle or slow connection costs a file descriptor and its
buffers, never a thread. Only a complete request goes to a small pool of
workers (:attr:`Limits.workers`), first to :attr:`App.authorize` (before any
byte of the body is read), then to :attr:`App.handle`. A listener therefore runs
1 + ``workers`` threads whatever its clients do.

The bounds (:class:`Limits`):

- at most ``max_connections`` open. When full, a new connection evicts the
  oldest one that has not sent a complete request yet (idle and slow clients
  go before a probe, which sends its request at once); when every open
  connection has a request in progress, the new one is closed at once;
- TLS handshake within ``handshake_timeout``; request head within
  ``header_timeout`` (from the accept, or from the first byte of a later
  request on a kept-alive connection); a kept-alive connection is closed after
  ``idle_timeout`` without a request; the body must arrive within
  ``body_timeout`` and the answer be taken within ``write_timeout``;
- a head over ``max_head`` bytes: 431; a Content-Length that is not one
  non-negative integer: 400; a chunked body: 411; a body over ``max_body``:
  413, answered from the head without reading the body.

Answers sent before a body was read close the connection.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import enum
import http
import logging
import queue
import re
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger("runner.listener")

_DIGITS = re.compile(r"[0-9]+")


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one client may cost a listener (seconds, bytes, counts)."""

    max_connections: int = 256
    workers: int = 4
    handshake_timeout: float = 10.0
    header_timeout: float = 10.0
    idle_timeout: float = 60.0
    body_timeout: float = 10.0
    write_timeout: float = 10.0
    max_head: int = 32 * 1024  # room for a long bearer token
    max_body: int = 4 * 1024  # probes and scrapes are GETs


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    target: str  # path and query, as sent
    version: str  # HTTP/1.1 or HTTP/1.0
    headers: Mapping[str, str]  # lower-cased names; repeated headers joined with ", "
    body: bytes = b""

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


def text(status: int, message: str) -> Response:
    return Response(status, (message + "\n").encode())


#: Answers a complete request (runs on a worker thread).
Handle = Callable[[Request], Response]
#: Sees the request head before its body is read; None lets it through, else the answer.
Authorize = Callable[[Request], Response | None]


@dataclasses.dataclass(frozen=True)
class App:
    """What a listener serves, and the bounds it serves it within."""

    handle: Handle
    authorize: Authorize | None = None
    limits: Limits = Limits()


class _State(enum.Enum):
    HANDSHAKE = "handshake"
    HEAD = "head"  # waiting for (the rest of) a request head
    BODY = "body"
    WORKING = "working"  # a worker has the request
    WRITE = "write"


class _Conn:
    def __init__(self, sock: socket.socket, *, now: float, limits: Limits, tls: bool) -> None:
        self.sock = sock
        self.state = _State.HANDSHAKE if tls else _State.HEAD
        self.deadline = now + (limits.handshake_timeout if tls else limits.header_timeout)
        self.since = now  # when it last had no request in progress
        self.buffer = bytearray()
        self.request: Request | None = None
        self.body_length = 0
        self.out = memoryview(b"")
        self.keep_alive = False
        self.idle = False  # kept alive, waiting for the first byte of another request
        self.eof = False  # the client shut down its sending side
        self.events = 0  # selector events registered; 0: not registered

    @property
    def waiting(self) -> bool:
        """No complete request yet (head or body missing): evicted first when full."""
        return self.state in (_State.HANDSHAKE, _State.HEAD, _State.BODY)


class Server:
    """One listening socket served by a selector thread and a bounded worker pool."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        app: App,
        name: str,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.app = app
        self.limits = app.limits
        self.name = name
        self._tls = tls
        self._socket = socket.create_server(address, backlog=1024, reuse_port=False)
        self._socket.setblocking(False)
        self.server_address: tuple[str, int] = self._socket.getsockname()[:2]
        self.server_port: int = self.server_address[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._socket, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
        self._done: queue.SimpleQueue[tuple[_Conn, Response | None]] = queue.SimpleQueue()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.limits.workers, thread_name_prefix=f"{name}-worker"
        )
        self._conns: set[_Conn] = set()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def connections(self) -> int:
        return len(self._conns)

    def shutdown(self) -> None:
        """Stop serving and close every connection and the listening socket."""
        self._stopping.set()
        self._wake()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)

    server_close = shutdown

    # -- the selector thread --------------------------------------------------

    def _loop(self) -> None:
        try:
            while not self._stopping.is_set():
                now = time.monotonic()
                deadlines = (c.deadline for c in self._conns if c.state is not _State.WORKING)
                wait = min(deadlines, default=now + 1.0) - now
                for key, mask in self._selector.select(max(0.0, min(wait, 1.0))):
                    if key.data is None:
                        self._accept()
                    elif key.data is self._wake_r:
                        self._drain_wake()
                    else:
                        self._serve_safely(key.data, mask)
                self._finish_work()
                self._expire(time.monotonic())
        except Exception:
            log.exception("listener failed", extra={"endpoint": self.name})
        finally:
            for conn in list(self._conns):
                self._close(conn)
            self._selector.close()
            self._socket.close()
            self._wake_r.close()
            self._wake_w.close()

    def _accept(self) -> None:
        for _ in range(256):  # drain the backlog, a bounded batch per turn
            try:
                sock, _address = self._socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. EMFILE: leave the rest in the backlog
                log.warning("accept failed", extra={"endpoint": self.name, "error": str(exc)})
                return
            if len(self._conns) >= self.limits.max_connections and not self._evict():
                sock.close()  # every open connection has a request in progress
                continue
            sock.setblocking(False)
            now = time.monotonic()
            if self._tls is not None:
                try:
                    sock = self._tls.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                except (OSError, ValueError):
                    sock.close()
                    continue
            conn = _Conn(sock, now=now, limits=self.limits, tls=self._tls is not None)
            self._conns.add(conn)
            if conn.state is _State.HANDSHAKE:
                self._handshake(conn)
            else:
                self._want(conn, selectors.EVENT_READ)

    def _evict(self) -> bool:
        waiting = [c for c in self._conns if c.waiting]
        if not waiting:
            return False
        self._close(min(waiting, key=lambda c: c.since))
        return True

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._conns if c.state is not _State.WORKING]:
            if conn.deadline <= now:
                self._close(conn)

    def _serve_safely(self, conn: _Conn, mask: int) -> None:
        try:
            self._serve(conn, mask)
        except Exception:  # one connection's surprise must not end the listener
            log.exception("connection failed", extra={"endpoint": self.name})
            self._close(conn)

    def _serve(self, conn: _Conn, mask: int) -> None:
        if conn not in self._conns:
            return
        if conn.state is _State.HANDSHAKE:
            self._handshake(conn)
        elif conn.state is _State.WRITE:
            self._write(conn)
        elif conn.state in (_State.HEAD, _State.BODY):
            self._read(conn)

    def _handshake(self, conn: _Conn) -> None:
        assert isinstance(conn.sock, ssl.SSLSocket)
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(conn, selectors.EVENT_WRITE)
            return
        except (OSError, ValueError):
            self._close(conn)
            return
        conn.state = _State.HEAD
        conn.deadline = time.monotonic() + self.limits.header_timeout
        self._read(conn)  # the request may already be decrypted and buffered

    def _read(self, conn: _Conn) -> None:
        self._want(conn, selectors.EVENT_READ)
        room = (
            self.limits.max_head + 1 - len(conn.buffer)
            if conn.state is _State.HEAD
            else conn.body_length - len(conn.buffer)
        )
        while room > 0:
            try:
                chunk = conn.sock.recv(min(room, 65536))
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:
                self._want(conn, selectors.EVENT_WRITE)
                break
            except (OSError, ValueError):
                self._close(conn)
                return
            if not chunk:  # the client is done sending; a complete request is still answered
                conn.eof = True
                break
            if conn.idle:
                # The first byte of a later request: from now on, the head's own deadline.
                conn.idle = False
                conn.deadline = time.monotonic() + self.limits.header_timeout
            conn.buffer += chunk
            room -= len(chunk)
        self._advance(conn)
        if conn.eof and conn.waiting and conn in self._conns:
            self._close(conn)  # went away before its request was complete

    def _advance(self, conn: _Conn) -> None:
        if conn.state is _State.HEAD:
            end = conn.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.buffer) > self.limits.max_head:
                    self._refuse(conn, text(431, "request head too large"))
                return
            head, rest = bytes(conn.buffer[:end]), bytes(conn.buffer[end + 4 :])
            conn.buffer = bytearray()
            request, problem = _parse(head, limits=self.limits)
            if problem is not None:
                self._refuse(conn, problem)
                return
            assert request is not None
            conn.request = request
            conn.body_length = int(request.headers.get("content-length") or 0)
            conn.keep_alive = _keeps_alive(request) and not conn.eof
            conn.buffer = bytearray(rest)
            if self.app.authorize is not None:
                self._dispatch(conn, self._authorize)
                return
            self._start_body(conn)
        elif conn.state is _State.BODY and len(conn.buffer) >= conn.body_length:
            self._dispatch(conn, self._handle)

    def _start_body(self, conn: _Conn) -> None:
        conn.state = _State.BODY
        conn.deadline = time.monotonic() + self.limits.body_timeout
        self._read(conn)  # dispatches at once when the body is already here

    def _dispatch(self, conn: _Conn, work: Callable[[_Conn], Response | None]) -> None:
        conn.state = _State.WORKING
        self._want(conn, 0)

        def run() -> None:
            try:
                answer = work(conn)
            except Exception:
                log.exception("request failed", extra={"endpoint": self.name})
                answer = text(500, "internal error")
            self._done.put((conn, answer))
            self._wake()

        try:
            self._pool.submit(run)
        except RuntimeError:  # shut down
            self._close(conn)

    def _authorize(self, conn: _Conn) -> Response | None:
        assert self.app.authorize is not None and conn.request is not None
        denied = self.app.authorize(conn.request)
        if denied is None:
            return None
        conn.keep_alive = False  # the body, if any, stays unread
        return denied

    def _handle(self, conn: _Conn) -> Response:
        assert conn.request is not None
        body = bytes(conn.buffer[: conn.body_length])
        conn.buffer = conn.buffer[conn.body_length :]
        return self.app.handle(dataclasses.replace(conn.request, body=body))

    def _finish_work(self) -> None:
        while True:
            try:
                conn, answer = self._done.get_nowait()
            except queue.Empty:
                return
            if conn not in self._conns:
                continue
            try:
                if answer is None:  # authorized: now the body
                    self._start_body(conn)
                else:
                    self._respond(conn, answer)
            except Exception:
                log.exception("connection failed", extra={"endpoint": self.name})
                self._close(conn)

    def _refuse(self, conn: _Conn, answer: Response) -> None:
        conn.keep_alive = False
        self._respond(conn, answer)

    def _respond(self, conn: _Conn, answer: Response) -> None:
        conn.state = _State.WRITE
        conn.deadline = time.monotonic() + self.limits.write_timeout
        conn.out = memoryview(_render(answer, keep_alive=conn.keep_alive))
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        self._want(conn, selectors.EVENT_WRITE)
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError):
                return
            except ssl.SSLWantReadError:
                self._want(conn, selectors.EVENT_READ)
                return
            except (OSError, ValueError):
                self._close(conn)
                return
            conn.out = conn.out[sent:]
        if not conn.keep_alive:
            self._close(conn)
            return
        # Kept alive: wait for the next request, which may already be buffered.
        now = time.monotonic()
        conn.state, conn.request, conn.since = _State.HEAD, None, now
        conn.idle = not conn.buffer
        conn.deadline = now + (
            self.limits.idle_timeout if conn.idle else self.limits.header_timeout
        )
        self._read(conn)  # also takes what TLS already decrypted, which select() cannot see

    # -- bookkeeping -----------------------------------------------------------

    def _want(self, conn: _Conn, events: int) -> None:
        if events == conn.events:
            return
        if conn.events == 0:
            self._selector.register(conn.sock, events, conn)
        elif events == 0:
            self._selector.unregister(conn.sock)
        else:
            self._selector.modify(conn.sock, events, conn)
        conn.events = events

    def _close(self, conn: _Conn) -> None:
        self._conns.discard(conn)
        if conn.events:
            self._selector.unregister(conn.sock)
            conn.events = 0
        with contextlib.suppress(OSError):
            conn.sock.close()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # BlockingIOError: already awake
            self._wake_w.send(b"\0")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass


def _parse(head: bytes, *, limits: Limits) -> tuple[Request | None, Response | None]:
    """The request line and headers, or the answer refusing them."""
    try:
        lines = head.lstrip(b"\r\n").decode("latin-1").split("\r\n")
    except UnicodeDecodeError:
        return None, text(400, "bad request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0].isalpha():
        return None, text(400, "bad request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    lengths: set[str] = set()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            return None, text(400, "bad header line")
        key, value = name.lower(), value.strip()
        if key == "content-length":
            lengths.update(v.strip() for v in value.split(","))
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "transfer-encoding" in headers:
        return None, text(411, "a body needs a Content-Length")
    if lengths:
        value = next(iter(lengths))
        if len(lengths) != 1 or not _DIGITS.fullmatch(value):
            return None, text(400, "bad Content-Length")
        # Checked by length first: int() refuses strings of thousands of digits.
        if len(value) > 15 or int(value) > limits.max_body:
            return None, text(413, f"body over {limits.max_body} bytes")
        headers["content-length"] = str(int(value))
    return Request(method=method, target=target, version=version, headers=headers), None


def _keeps_alive(request: Request) -> bool:
    tokens = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
    if request.version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def _render(answer: Response, *, keep_alive: bool) -> bytes:
    try:
        reason = http.HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    head = [
        f"HTTP/1.1 {answer.status} {reason}",
        f"Content-Type: {answer.content_type}",
        f"Content-Length: {len(answer.body)}",
    ]
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + answer.body


def serve(
    address: tuple[str, int], *, app: App, name: str, tls: ssl.SSLContext | None = None
) -> Server:
    """Bind ``address`` and serve ``app`` on a thread of its own; raises OSError."""
    server = Server(address, app=app, name=name, tls=tls)
    server.start()
    return server
