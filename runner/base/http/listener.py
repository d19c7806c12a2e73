"""Bounded HTTP/1.1 listeners: the probes, ``/metrics`` and the custom-metrics endpoint.

These ports are reachable from other pods, so no client may hold a thread or
unbounded memory by connecting and staying silent. One selector thread owns
every connection while it handshakes (TLS), sends its request head or body, or
receives its answer: an idle or slow connection costs a file descriptor and its
buffers, never a thread. Only a complete request goes to a small pool of
workers (:attr:`~runner.base.http.connections.Limits.workers`), first to
:attr:`App.authorize` (before any byte of the body is read), then to
:attr:`App.handle`. A listener therefore runs 1 + ``workers`` threads whatever its
clients do.

The bounds (:class:`~runner.base.http.connections.Limits`):

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
  413, answered from the head without reading the body;
- bodies held at once (being read, or with a worker) add up to at most
  ``max_buffered`` bytes: a request whose body does not fit is answered 503
  from its head, unread; at most ``max_pending`` complete requests wait for a
  worker: more are answered 429 at once, never after the client gave up.

Answers sent before a body was read close the connection.

This module accepts connections and runs the workers; the connections and
their bounds are :mod:`runner.base.http.connections`'s, each connection's way
through a request is :mod:`runner.base.http.exchange`'s, and the HTTP/1.1 wire
format is :mod:`runner.base.http.http1`'s.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import queue
import selectors
import socket
import ssl
import threading
import time

# Named apart: inside Server, ``connections`` is its method.
from runner.base.http import connections as connections_mod
from runner.base.http import exchange, http1

log = logging.getLogger("runner.listener")

_DEFAULT_LIMITS = connections_mod.Limits()


@dataclasses.dataclass(frozen=True)
class App:
    """What a listener serves, and the bounds it serves it within."""

    handle: http1.Handle
    authorize: http1.Authorize | None = None
    limits: connections_mod.Limits = _DEFAULT_LIMITS


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
        self._done: queue.SimpleQueue[tuple[connections_mod.Conn, http1.Response | None]] = (
            queue.SimpleQueue()
        )
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.limits.workers, thread_name_prefix=f"{name}-worker"
        )
        self._conns = connections_mod.Connections(self._selector, limits=self.limits)
        self._exchange = exchange.Exchange(
            handle=app.handle,
            authorize=app.authorize,
            conns=self._conns,
            limits=self.limits,
            submit=self._submit,
        )
        self._queued = 0  # requests submitted that no worker has started yet
        self._queued_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def use_tls(self, context: ssl.SSLContext) -> None:
        """Handshake new connections with ``context`` (a reloaded certificate); open ones
        keep theirs. One assignment: an accept sees the old context or the new one."""
        self._tls = context

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
                wait = self._conns.next_deadline(default=now + 1.0) - now
                for key, mask in self._selector.select(max(0.0, min(wait, 1.0))):
                    if key.data is None:
                        self._accept()
                    elif key.data is self._wake_r:
                        self._drain_wake()
                    else:
                        self._serve_safely(key.data, mask)
                self._finish_work()
                self._conns.expire(time.monotonic())
        except Exception:
            log.exception("listener failed", extra={"endpoint": self.name})
        finally:
            self._conns.close_all()
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
            if not self._conns.room():
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
            conn = connections_mod.Conn(
                sock, now=now, limits=self.limits, tls=self._tls is not None
            )
            self._conns.add(conn)
            self._exchange.start(conn)

    def _serve_safely(self, conn: connections_mod.Conn, mask: int) -> None:
        try:
            self._exchange.serve(conn, mask)
        except Exception:  # one connection's surprise must not end the listener
            log.exception("connection failed", extra={"endpoint": self.name})
            self._conns.close(conn)

    # -- the workers ------------------------------------------------------------

    def _submit(self, conn: connections_mod.Conn, work: exchange.Work) -> None:
        limit = self.limits.max_pending
        with self._queued_lock:
            full = limit is not None and self._queued >= limit
            if not full:
                self._queued += 1
        if full:
            # Every worker is busy and enough wait already: answered now, not after the
            # client gave up (an unread body closes the connection).
            conn.keep_alive = False
            self._done.put((conn, http1.text(429, "too many requests in progress")))
            self._wake()
            return

        def run() -> None:
            with self._queued_lock:
                self._queued -= 1
            try:
                answer = work(conn)
            except Exception:
                log.exception("request failed", extra={"endpoint": self.name})
                answer = http1.text(500, "internal error")
            self._done.put((conn, answer))
            self._wake()

        try:
            self._pool.submit(run)
        except RuntimeError:  # shut down
            with self._queued_lock:
                self._queued -= 1
            self._conns.close(conn)

    def _finish_work(self) -> None:
        while True:
            try:
                conn, answer = self._done.get_nowait()
            except queue.Empty:
                return
            if conn not in self._conns:
                continue
            try:
                self._exchange.finish(conn, answer)
            except Exception:
                log.exception("connection failed", extra={"endpoint": self.name})
                self._conns.close(conn)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # BlockingIOError: already awake
            self._wake_w.send(b"\0")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass


def serve(
    address: tuple[str, int], *, app: App, name: str, tls: ssl.SSLContext | None = None
) -> Server:
    """Bind ``address`` and serve ``app`` on a thread of its own; raises OSError."""
    server = Server(address, app=app, name=name, tls=tls)
    server.start()
    return server
