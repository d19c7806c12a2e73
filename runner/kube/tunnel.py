"""Switched connections to the API server: the byte streams of exec, attach and port-forward.

The REST client (:mod:`runner.kube.client`) speaks request and response over pooled
connections. exec, attach and port-forward instead ask the API server to switch
protocols (``Connection: Upgrade`` to SPDY/3.1 or WebSocket, as kubectl, client-go
and the Python client do) and then carry their own framing over the raw connection,
in both directions. This module opens such a connection with the client's
credentials and splices it to another socket, byte for byte; it knows nothing of
the protocols inside.

One thread moves both directions (a selector loop): an SSL connection must not be
read and written from two threads at once. Another thread may end a splice (or any
blocked read) with :func:`cut`.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import selectors
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from runner.kube import errors, transport
from runner.kube.config import ClientConfig

SWITCHING_PROTOCOLS = 101
_REPLACED = frozenset({"host", "authorization", "content-length"})
_CHUNK = 65536


@dataclass
class Answer:
    """The API server's answer head; ``body`` is read for answers other than 101."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    connection: socket.socket
    pending: bytes  # stream bytes that arrived with the head (101 only)


def _drain(reader: io.BufferedIOBase, sock: socket.socket) -> bytes:
    """Bytes ``reader`` already buffered, without waiting for more."""
    sock.setblocking(False)
    try:
        return reader.read1(_CHUNK) or b""
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return b""
    finally:
        sock.setblocking(True)


def buffered(reader: io.BufferedIOBase, sock: socket.socket) -> bytes:
    """Everything ``reader`` (a buffered file over ``sock``) holds that was not read yet."""
    found = b""
    while chunk := _drain(reader, sock):
        found += chunk
    return found


def open_upgrade(
    config: ClientConfig,
    *,
    method: str,
    path: str,
    headers: Iterable[tuple[str, str]],
    body: bytes | None = None,
    timeout: float = 30.0,
) -> Answer:
    """Send one upgrade request with the client's credentials and read the answer head.

    ``headers`` are the caller's (``Connection``, ``Upgrade``, ``Sec-WebSocket-*``,
    ``X-Stream-Protocol-Version``...); ``Host`` and ``Authorization`` are replaced.
    The caller owns ``Answer.connection`` and must close it.
    """
    url = urlsplit(config.server)
    host = url.hostname or "127.0.0.1"
    port = url.port or (443 if url.scheme == "https" else 80)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {url.netloc}"]
    lines += [f"{k}: {v}" for k, v in headers if k.lower() not in _REPLACED]
    token = config.bearer_token()
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if body:
        lines.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    sock: socket.socket | None = None
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        # Streams carry small frames both ways; Nagle would hold each one back.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if url.scheme == "https":
            context = transport.ssl_context(config)  # the REST client's TLS settings
            sock = context.wrap_socket(sock, server_hostname=host)
        sock.sendall(request)
        answer = http.client.HTTPResponse(sock, method=method)
        answer.begin()
        result = Answer(
            status=answer.status,
            reason=answer.reason,
            headers=list(answer.getheaders()),
            body=b"",
            connection=sock,
            pending=b"",
        )
        if answer.status == SWITCHING_PROTOCOLS:
            sock.settimeout(None)  # a stream may stay quiet for as long as it likes
            assert answer.fp is not None
            result.pending = buffered(answer.fp, sock)
        else:
            result.body = answer.read()
        return result
    except (OSError, http.client.HTTPException) as exc:
        if sock is not None:
            sock.close()
        raise errors.TransportError(f"{method} {path} (upgrade): {exc}") from exc


def splice(
    *,
    near: socket.socket,
    near_pending: bytes,
    far: socket.socket,
    far_pending: bytes,
    linger: float = 5.0,
) -> None:
    """Copy bytes both ways between two connected sockets until the stream is over.

    ``*_pending`` are bytes already read from one side, still to be delivered to the
    other. The stream is over when the far side (the API server) has finished
    sending and everything it sent was delivered. When the near side stops sending
    first, the far side is told with a half-close — or, over TLS, where a half-close
    is not possible, given ``linger`` seconds to finish before the splice ends.
    """
    to_far, to_near = bytearray(near_pending), bytearray(far_pending)
    near_open = far_open = True  # whether each side may still send
    deadline: float | None = None
    for sock in (near, far):
        sock.setblocking(False)
    with selectors.DefaultSelector() as selector:
        while far_open or to_near:
            for sock, events in (
                (near, _events(reading=near_open and not to_far, writing=bool(to_near))),
                (far, _events(reading=far_open and not to_near, writing=bool(to_far))),
            ):
                _watch(selector, sock, events)
            # TLS may hold decrypted bytes that the socket no longer signals as readable.
            held = far_open and not to_near and isinstance(far, ssl.SSLSocket) and far.pending()
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = {key.fileobj: mask for key, mask in selector.select(0 if held else timeout)}
            if deadline is not None and time.monotonic() >= deadline:
                return
            if held:
                ready[far] = ready.get(far, 0) | selectors.EVENT_READ
            try:
                if near_open and not to_far and ready.get(near, 0) & selectors.EVENT_READ:
                    chunk = _receive(near)
                    if chunk:
                        to_far += chunk
                    elif chunk == b"":
                        near_open = False
                        if isinstance(far, ssl.SSLSocket):
                            deadline = time.monotonic() + linger
                        else:
                            far.shutdown(socket.SHUT_WR)
                if far_open and not to_near and ready.get(far, 0) & selectors.EVENT_READ:
                    chunk = _receive(far)
                    if chunk:
                        to_near += chunk
                    elif chunk == b"":
                        far_open = False
                if to_far and ready.get(far, 0) & selectors.EVENT_WRITE:
                    del to_far[: _send(far, to_far)]
                if to_near and ready.get(near, 0) & selectors.EVENT_WRITE:
                    del to_near[: _send(near, to_near)]
            except OSError:
                return  # a side reset its connection: nothing more can be delivered
    with contextlib.suppress(OSError):
        near.shutdown(socket.SHUT_WR)


def cut(sock: socket.socket) -> None:
    """End ``sock``'s connection from any thread: whoever waits on it sees its end.

    The plain socket's shutdown, also under TLS: ``SSLSocket.shutdown`` would also
    drop the TLS state that the thread using the socket may be in the middle of.
    """
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _events(*, reading: bool, writing: bool) -> int:
    return (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if writing else 0)


def _watch(selector: selectors.BaseSelector, sock: socket.socket, events: int) -> None:
    """Wait for exactly ``events`` on ``sock`` (none: not watched, so no busy loop)."""
    try:
        current = selector.get_key(sock).events
    except KeyError:
        current = 0
    if events == current:
        return
    if not events:
        selector.unregister(sock)
    elif not current:
        selector.register(sock, events)
    else:
        selector.modify(sock, events)


def _receive(sock: socket.socket) -> bytes | None:
    """Up to one chunk; ``b""`` at the end of the stream, ``None`` if nothing is ready."""
    try:
        return sock.recv(_CHUNK)
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return None


def _send(sock: socket.socket, data: bytearray) -> int:
    try:
        return sock.send(data)
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return 0
