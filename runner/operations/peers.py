"""Who is asking: the remote address of the request a listener's worker is serving.

The runner's listeners (:mod:`runner.operations.health`) serve apps that see the
request alone (:class:`runner.base.http.listener.Request`). Two decisions on the metrics
port need the client's address as well: secure metrics rate-limit reviews of
unknown bearer tokens per client (:mod:`runner.operations.access`), so one client's
flood of random tokens never throttles another's scrapes; and ``GET /debug/rbac``
answers loopback clients as ``/metrics`` does, others only with a token allowed to
``get`` it (:mod:`runner.operations.metrics.endpoint`).

:class:`Server` is the bounded listener with one addition: while a worker runs a
request's ``authorize`` or ``handle``, :func:`current` is that connection's remote
host. It hooks the listener's hand-over to its workers (``_submit``), the one place
that holds both the connection and the work; a ``peer`` field on the request itself
(:mod:`runner.base.http.http1`) would make this module unnecessary.
"""

from __future__ import annotations

import contextvars
import functools
import ipaddress
import socket
import ssl

from runner.base.http import connections, exchange, http1, listener

#: The remote host of the request this worker serves; "" outside a request (unknown).
_PEER: contextvars.ContextVar[str] = contextvars.ContextVar("peer", default="")


def current() -> str:
    """The remote host (an IP address) of the request being served; "" if unknown."""
    return _PEER.get()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, or IPv4-mapped 127.x).
    An unknown host is not: what depends on it fails closed."""
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class Server(listener.Server):
    """A bounded listener whose workers know the remote host they serve (:func:`current`)."""

    def _submit(self, conn: connections.Conn, work: exchange.Work) -> None:
        super()._submit(conn, functools.partial(_as_peer, work))


def _as_peer(work: exchange.Work, conn: connections.Conn) -> http1.Response | None:
    """``work`` on ``conn``, with :func:`current` naming the connection's remote host."""
    token = _PEER.set(_remote_host(conn.sock))
    try:
        return work(conn)
    finally:
        _PEER.reset(token)


def _remote_host(sock: socket.socket) -> str:
    try:
        peer = sock.getpeername()
    except (OSError, ValueError):  # gone meanwhile: unknown
        return ""
    return str(peer[0]) if isinstance(peer, tuple) else ""


def serve(
    address: tuple[str, int], *, app: listener.App, name: str, tls: ssl.SSLContext | None = None
) -> Server:
    """Bind ``address`` and serve ``app`` on a thread of its own; raises OSError."""
    server = Server(address, app=app, name=name, tls=tls)
    server.start()
    return server
