"""One connection's way through its requests, on a bounded listener's selector thread.

:mod:`runner.base.http.listener` accepts connections and runs the workers; this moves
each connection through its states without ever blocking: the TLS handshake,
the request head (parsed by :mod:`runner.base.http.http1`), a worker's
``authorize`` before any byte of the body is read, the body, a worker's
``handle``, and the answer, then the next request on a kept-alive connection.
Every state has its deadline (:class:`runner.base.http.connections.Limits`); answers
sent before a body was read close the connection.
"""

from __future__ import annotations

import dataclasses
import selectors
import ssl
import time
from collections.abc import Callable

from runner.base.http import connections, http1

#: What a worker does with a connection's request: None lets the body be read, else the answer.
Work = Callable[[connections.Conn], http1.Response | None]
#: Hands a connection's request to a worker; its answer comes back through :meth:`Exchange.finish`.
Submit = Callable[[connections.Conn, Work], None]


class Exchange:
    """Reads requests from and writes answers to the listener's connections."""

    def __init__(
        self,
        *,
        handle: http1.Handle,
        authorize: http1.Authorize | None,
        conns: connections.Connections,
        limits: connections.Limits,
        submit: Submit,
    ) -> None:
        self._handle_request = handle
        self._authorize_request = authorize
        self._conns = conns
        self.limits = limits
        self._submit = submit

    def start(self, conn: connections.Conn) -> None:
        """A connection just accepted."""
        if conn.state is connections.State.HANDSHAKE:
            self._handshake(conn)
        else:
            self._conns.want(conn, selectors.EVENT_READ)

    def serve(self, conn: connections.Conn, mask: int) -> None:
        """The selector found ``conn`` ready for what it waits for."""
        if conn not in self._conns:
            return
        if conn.state is connections.State.HANDSHAKE:
            self._handshake(conn)
        elif conn.state is connections.State.WRITE:
            self._write(conn)
        elif conn.state in (connections.State.HEAD, connections.State.BODY):
            self._read(conn)

    def finish(self, conn: connections.Conn, answer: http1.Response | None) -> None:
        """A worker is done with ``conn``: ``answer`` it, or (authorized) read its body."""
        if answer is None:
            self._start_body(conn)
        else:
            self._conns.release(conn)  # the body, if read, went to the worker and back
            self._respond(conn, answer)

    def _handshake(self, conn: connections.Conn) -> None:
        assert isinstance(conn.sock, ssl.SSLSocket)
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._conns.want(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._conns.want(conn, selectors.EVENT_WRITE)
            return
        except (OSError, ValueError):
            self._conns.close(conn)
            return
        conn.state = connections.State.HEAD
        conn.deadline = time.monotonic() + self.limits.header_timeout
        self._read(conn)  # the request may already be decrypted and buffered

    def _read(self, conn: connections.Conn) -> None:
        self._conns.want(conn, selectors.EVENT_READ)
        room = (
            self.limits.max_head + 1 - len(conn.buffer)
            if conn.state is connections.State.HEAD
            else conn.body_length - len(conn.buffer)
        )
        while room > 0:
            try:
                chunk = conn.sock.recv(min(room, 65536))
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:
                self._conns.want(conn, selectors.EVENT_WRITE)
                break
            except (OSError, ValueError):
                self._conns.close(conn)
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
            self._conns.close(conn)  # went away before its request was complete

    def _advance(self, conn: connections.Conn) -> None:
        if conn.state is connections.State.HEAD:
            end = conn.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.buffer) > self.limits.max_head:
                    self._refuse(conn, http1.text(431, "request head too large"))
                return
            head, rest = bytes(conn.buffer[:end]), bytes(conn.buffer[end + 4 :])
            conn.buffer = bytearray()
            request, problem = http1.parse(head, max_body=self.limits.max_body)
            if problem is not None:
                self._refuse(conn, problem)
                return
            assert request is not None
            conn.request = dataclasses.replace(request, received=time.monotonic())
            conn.body_length = int(request.headers.get("content-length") or 0)
            conn.keep_alive = http1.keeps_alive(request) and not conn.eof
            conn.buffer = bytearray(rest)
            if self._authorize_request is not None:
                self._dispatch(conn, self._authorize)
                return
            self._start_body(conn)
        elif conn.state is connections.State.BODY and len(conn.buffer) >= conn.body_length:
            self._dispatch(conn, self._handle)

    def _start_body(self, conn: connections.Conn) -> None:
        if not self._conns.reserve(conn, conn.body_length):
            # Bodies in hand already fill the budget: answered from the head, unread.
            self._refuse(conn, http1.text(503, "too many request bodies in progress"))
            return
        conn.state = connections.State.BODY
        conn.deadline = time.monotonic() + self.limits.body_timeout
        self._read(conn)  # dispatches at once when the body is already here

    def _dispatch(self, conn: connections.Conn, work: Work) -> None:
        conn.state = connections.State.WORKING
        self._conns.want(conn, 0)
        self._submit(conn, work)

    def _authorize(self, conn: connections.Conn) -> http1.Response | None:
        """On a worker: the app's verdict on the head, before the body is read."""
        assert self._authorize_request is not None and conn.request is not None
        denied = self._authorize_request(conn.request)
        if denied is None:
            return None
        conn.keep_alive = False  # the body, if any, stays unread
        return denied

    def _handle(self, conn: connections.Conn) -> http1.Response:
        """On a worker: the app's answer to the complete request."""
        assert conn.request is not None
        body = bytes(conn.buffer[: conn.body_length])
        conn.buffer = conn.buffer[conn.body_length :]
        return self._handle_request(dataclasses.replace(conn.request, body=body))

    def _refuse(self, conn: connections.Conn, answer: http1.Response) -> None:
        conn.keep_alive = False
        self._respond(conn, answer)

    def _respond(self, conn: connections.Conn, answer: http1.Response) -> None:
        conn.state = connections.State.WRITE
        conn.deadline = time.monotonic() + self.limits.write_timeout
        conn.out = memoryview(http1.render(answer, keep_alive=conn.keep_alive))
        self._write(conn)

    def _write(self, conn: connections.Conn) -> None:
        self._conns.want(conn, selectors.EVENT_WRITE)
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError):
                return
            except ssl.SSLWantReadError:
                self._conns.want(conn, selectors.EVENT_READ)
                return
            except (OSError, ValueError):
                self._conns.close(conn)
                return
            conn.out = conn.out[sent:]
        if not conn.keep_alive:
            self._conns.close(conn)
            return
        # Kept alive: wait for the next request, which may already be buffered.
        now = time.monotonic()
        conn.state, conn.request, conn.since = connections.State.HEAD, None, now
        conn.idle = not conn.buffer
        conn.deadline = now + (
            self.limits.idle_timeout if conn.idle else self.limits.header_timeout
        )
        self._read(conn)  # also takes what TLS already decrypted, which select() cannot see
