"""The open connections of a bounded listener, and what each may cost.

:mod:`runner.base.http.listener` accepts connections and :mod:`runner.base.http.exchange`
moves each through its request; this keeps them within :class:`Limits`: it
registers each connection with the listener's selector for what it waits for,
closes the ones past their deadline, and when the listener is full evicts the
oldest one that has not sent a complete request yet (idle and slow clients go
before a probe, which sends its request at once). Used by the listener's
selector thread only: no lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import selectors
import socket

from runner.base.http import http1


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
    # Bodies held at once (being read or with a worker), by their Content-Length; a request
    # that does not fit is answered 503 from its head, unread. None: max_connections bodies.
    max_buffered: int | None = None
    # Complete requests waiting for a worker; more are answered 429 at once. None: no bound.
    max_pending: int | None = None


class State(enum.Enum):
    HANDSHAKE = "handshake"
    HEAD = "head"  # waiting for (the rest of) a request head
    BODY = "body"
    WORKING = "working"  # a worker has the request
    WRITE = "write"


class Conn:
    def __init__(self, sock: socket.socket, *, now: float, limits: Limits, tls: bool) -> None:
        self.sock = sock
        self.state = State.HANDSHAKE if tls else State.HEAD
        self.deadline = now + (limits.handshake_timeout if tls else limits.header_timeout)
        self.since = now  # when it last had no request in progress
        self.buffer = bytearray()
        self.request: http1.Request | None = None
        self.body_length = 0
        self.out = memoryview(b"")
        self.keep_alive = False
        self.idle = False  # kept alive, waiting for the first byte of another request
        self.eof = False  # the client shut down its sending side
        self.events = 0  # selector events registered; 0: not registered
        self.reserved = 0  # body bytes counted against Limits.max_buffered

    @property
    def waiting(self) -> bool:
        """No complete request yet (head or body missing): evicted first when full."""
        return self.state in (State.HANDSHAKE, State.HEAD, State.BODY)


class Connections:
    """The listener's open connections, registered with its selector."""

    def __init__(self, selector: selectors.BaseSelector, *, limits: Limits) -> None:
        self._selector = selector
        self._limits = limits
        self._conns: set[Conn] = set()
        self.buffered = 0  # body bytes reserved by open connections

    def __len__(self) -> int:
        return len(self._conns)

    def __contains__(self, conn: object) -> bool:
        return conn in self._conns

    def add(self, conn: Conn) -> None:
        self._conns.add(conn)

    def room(self) -> bool:
        """Whether one more may open: below ``max_connections``, or after evicting one."""
        return len(self._conns) < self._limits.max_connections or self._evict()

    def next_deadline(self, default: float) -> float:
        """The earliest deadline of a connection that is not with a worker."""
        return min(
            (c.deadline for c in self._conns if c.state is not State.WORKING), default=default
        )

    def expire(self, now: float) -> None:
        """Close the connections (not with a worker) whose deadline has come."""
        for conn in [c for c in self._conns if c.state is not State.WORKING]:
            if conn.deadline <= now:
                self.close(conn)

    def want(self, conn: Conn, events: int) -> None:
        """Wait for ``events`` on ``conn`` (0: for none, while a worker has it)."""
        if events == conn.events:
            return
        if conn.events == 0:
            self._selector.register(conn.sock, events, conn)
        elif events == 0:
            self._selector.unregister(conn.sock)
        else:
            self._selector.modify(conn.sock, events, conn)
        conn.events = events

    def reserve(self, conn: Conn, size: int) -> bool:
        """Count ``size`` body bytes for ``conn``; False when they would pass the budget."""
        budget = self._limits.max_buffered
        if budget is not None and size > 0 and self.buffered + size > budget:
            return False
        self.release(conn)
        conn.reserved = size
        self.buffered += size
        return True

    def release(self, conn: Conn) -> None:
        """``conn``'s body is gone (answered or closed): its bytes count no more."""
        self.buffered -= conn.reserved
        conn.reserved = 0

    def close(self, conn: Conn) -> None:
        self.release(conn)
        self._conns.discard(conn)
        if conn.events:
            self._selector.unregister(conn.sock)
            conn.events = 0
        with contextlib.suppress(OSError):
            conn.sock.close()

    def close_all(self) -> None:
        for conn in list(self._conns):
            self.close(conn)

    def _evict(self) -> bool:
        waiting = [c for c in self._conns if c.waiting]
        if not waiting:
            return False
        self.close(min(waiting, key=lambda c: c.since))
        return True
