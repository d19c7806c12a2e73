"""``/healthz`` and ``/readyz`` for the kubelet's probes, and the listeners of
every endpoint the runner serves.

healthz answers 200 while the runtime makes progress, and 500 with a short
reason when it does not (:func:`problem`): a worker stuck well past its
reconcile timeout, or a primary informer whose thread ended or whose loop
showed no sign of life for :data:`STALL_AFTER`. The kubelet then restarts
the container, which is the only cure for a wedged thread. readyz answers
only once every informer has finished its first list (the caches are
synced) and, under leader election, regardless of leadership (a standby
replica is ready to take over).

:func:`listen` binds an endpoint given by a ``--*-bind-address`` flag; an
address that cannot be served stops the runner with the flag and port named.
Every endpoint is a bounded :mod:`runner.base.http.listener` whose workers know
each request's remote host (:mod:`runner.operations.peers`).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from runner.base import errors
from runner.base.http import http1, listener
from runner.operations import peers
from runner.watch import source, stream

log = logging.getLogger("runner.health")

Check = Callable[[], bool]
#: None while the runtime is healthy, else a short reason for /healthz's 500.
Live = Callable[[], str | None]

#: An informer that showed no sign of life for this long is stopped. A healthy one
#: shows some at least every stream.TIMEOUT_SECONDS (the server ends each watch then).
STALL_AFTER = 2.0 * stream.TIMEOUT_SECONDS


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
    handler: listener.App,
    name: str,
    tls: ssl.SSLContext | None = None,
    default_host: str = "0.0.0.0",
) -> listener.Server | None:
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


def serve(
    address: tuple[str, int],
    *,
    handler: listener.App,
    name: str,
    tls: ssl.SSLContext | None = None,
) -> listener.Server:
    # TLS handshakes happen on the listener's selector thread, never blocking accept().
    # Its workers know each request's remote host (peers.current()).
    server = peers.serve(address, app=handler, name=name, tls=tls)
    log.info(
        "serving",
        extra={
            "endpoint": name,
            "address": f"{address[0]}:{server.server_port}",
            "scheme": "https" if tls is not None else "http",
        },
    )
    return server


def handler_for(*, ready: Check, live: Live = lambda: None) -> listener.App:
    """/healthz (``live``) and /readyz (``ready``); GETs only, no body wanted."""

    def handle(request: http1.Request) -> http1.Response:
        if request.method != "GET":
            return http1.text(405, "method not allowed")
        if request.path.startswith("/healthz"):
            reason = live()
            return http1.text(200, "ok") if reason is None else http1.text(500, reason)
        if request.path.startswith("/readyz"):
            return http1.text(200, "ok") if ready() else http1.text(503, "caches not synced")
        return http1.text(404, "not found")

    # Probes every few seconds would drown the operator's logs: nothing is logged per request.
    return listener.App(handle=handle)


# -- liveness ------------------------------------------------------------------


class Workers(Protocol):
    """A controller's workers (:class:`runner.reconcile.controller.Controller`)."""

    @property
    def name(self) -> str: ...

    def busy_since(self) -> list[float]:
        """time.monotonic() at which each reconcile running now started."""
        ...


@dataclasses.dataclass(frozen=True)
class Watcher:
    """An informer and the thread that runs its loop."""

    informer: source.Informer
    thread: threading.Thread


def grace(timeout: float) -> float:
    """How long past its timeout a reconcile may run before its worker counts as stuck."""
    return max(60.0, 0.1 * timeout)


def stuck(*, workers: Workers, timeout: float | None, now: float) -> str | None:
    """Why the workers count as stuck (a reconcile past timeout + grace), else None."""
    if timeout is None or timeout <= 0:
        return None
    oldest = min(workers.busy_since(), default=None)
    if oldest is None or now - oldest <= timeout + grace(timeout):
        return None
    return f"{workers.name}: a reconcile has run {now - oldest:.0f}s, past its {timeout:g}s timeout"


def stalled(watcher: Watcher, *, now: float) -> str | None:
    """Why the informer counts as stopped (thread ended, or silent too long), else None."""
    informer = watcher.informer
    where = f"informer of {informer.resource.plural} in {informer.namespace or 'all namespaces'}"
    if not watcher.thread.is_alive():
        return f"{where}: its thread ended"
    activity: Callable[[], float] | None = getattr(informer, "last_activity", None)
    if activity is not None and now - activity() > STALL_AFTER:
        return f"{where}: no progress for {now - activity():.0f}s"
    return None


def problem(
    *,
    workers: Iterable[tuple[Workers, float | None]],
    watchers: Iterable[Watcher],
    now: float,
) -> str | None:
    """The first reason the runtime is not live ((workers, their timeout) pairs), else None."""
    for each, timeout in workers:
        reason = stuck(workers=each, timeout=timeout, now=now)
        if reason is not None:
            return reason
    for watcher in watchers:
        reason = stalled(watcher, now=now)
        if reason is not None:
            return reason
    return None


def run_timeout(settings: object, watch: object) -> float | None:
    """The reconcile timeout of a watch: its own, else the settings' (None: no limit)."""
    for owner in (watch, settings):
        value = getattr(owner, "reconcile_timeout", None)
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return None
