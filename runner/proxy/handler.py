"""One request through the per-run proxy, over HTTP: who sent it, its body, the answer's framing.

Part of the Ansible ↔ API stage (see the package docstring). The handler finds
the run from its token (:mod:`runner.proxy.routing`), reads the body within the
listener's bounds, hands what the request means to the runtime to an
:class:`~runner.proxy.upstream.Exchange` (caches, owner marks, writes), forwards
it to the API server, and relays the answer: whole, chunk by chunk for watches
and followed logs, or byte for byte once exec, attach or port-forward switched
protocols (:mod:`runner.kube.tunnel`). Streams end when their run does.

It knows the proxy only through the :class:`~runner.proxy.upstream.Services` the
server hands it, never the server itself. What the listener bounds (timeouts,
connections, body size) is in :mod:`runner.proxy.acceptor`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar
from urllib.parse import urlsplit

from runner.kube import errors as kube_errors
from runner.kube import tunnel
from runner.kube.transport import TransportError
from runner.proxy import acceptor, routing, sessions, upstream

log = logging.getLogger("runner.proxy")

#: Seconds each read of a non-stream answer may take (the API server's own request
#: timeout is 60 s; a frozen connection must not hold a run's task forever).
READ_TIMEOUT = 60.0
_FORWARDED_HEADERS = ("content-type", "accept", "user-agent")
# What an upgrade request (exec, attach, port-forward) carries to the API server.
_UPGRADE_HEADERS = frozenset(
    {
        "connection",
        "upgrade",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
        "x-stream-protocol-version",
        "content-type",
        "accept",
        "user-agent",
    }
)
# What the client gets of an API server's answer head, besides its status.
_RELAYED_HEADERS = ("Content-Type", "Warning", "Retry-After")


def _status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    ).encode()


def _content_length(value: str | None) -> int | None:
    """The announced body length; None if it is not a non-negative number."""
    if value is None:
        return 0
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _relayed(headers: Any) -> list[tuple[str, str]]:
    """The answer headers a client acts on, each value kept (``Warning`` may repeat)."""
    return [(name, value) for name in _RELAYED_HEADERS for value in headers.getlist(name)]


def _allowed_read_only(method: str, query: Mapping[str, list[str]]) -> bool:
    """The method rule of a read-only proxy (the whole allow-list, paths included, is
    :func:`runner.proxy.routing.read_only_refusal`)."""
    return routing.read_only_method(method, query)


class Handler(acceptor.BoundedHandler):
    """One proxy connection's requests; :func:`handler_for` binds the proxy's services."""

    services: ClassVar[upstream.Services]

    def setup(self) -> None:
        super().setup()
        # Without this, Nagle + delayed ACK adds ~40 ms to every small response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass  # request logs would repeat every module call; errors are logged explicitly

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.begin_body()
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET  # noqa: N815

    def _send(
        self, code: int, body: bytes, headers: Iterable[tuple[str, str]] | None = None
    ) -> None:
        headers = list(headers or [("Content-Type", "application/json")])
        self.send_response(code)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, code: int, reason: str, message: str) -> None:
        """Answer without reading the body: the connection cannot serve another request."""
        self.close_connection = True
        self._send(code, _status_body(code, reason, message))

    def _body(self) -> tuple[bool, bytes | None]:
        """The request body, once the token is known: (False, None) if refused here."""
        if self.headers.get("Transfer-Encoding"):
            self._refuse(411, "LengthRequired", "send the body with a Content-Length")
            return False, None
        lengths = self.headers.get_all("Content-Length") or []
        length = _content_length(lengths[0] if lengths else None)
        if length is None or len(set(lengths)) > 1:
            self._refuse(400, "BadRequest", "Content-Length is not a non-negative number")
            return False, None
        if length > acceptor.MAX_BODY:
            message = f"request body of {length} bytes is larger than {acceptor.MAX_BODY}"
            self._refuse(413, "RequestEntityTooLarge", message)
            return False, None
        if not length:
            return True, None
        try:
            return True, self.read_body(length)
        except OSError:  # too slow, or gone: nothing is answered
            self.close_connection = True
            return False, None

    def _handle(self) -> None:
        try:
            token, self.path = routing.route(self.path, self.headers.get("Authorization", ""))
        except routing.BadTargetError as exc:
            self._refuse(400, "BadRequest", f"not a run's API path: {exc}")
            return
        session = self.services.sessions.get(token) if token else None
        if session is None:
            self._refuse(401, "Unauthorized", "no live run owns this token")
            return
        ok, body = self._body()
        if not ok:
            return
        refusal = (
            routing.read_only_refusal(self.command, self.path, upgrade=self._upgrading())
            if self.services.read_only
            else None
        )
        if refusal is not None:
            self.services.audit.refuse(self.command, self.path, body)
            self.services.audit.account(session, method=self.command, path=self.path)
            path = urlsplit(self.path).path
            message = f"read-only proxy: {self.command} {path} refused: {refusal}"
            self._send(403, _status_body(403, "Forbidden", message))
            return
        if self.headers.get("Upgrade"):
            self._switch(session, body)  # exec, attach, port-forward
            return
        self._forward(session, body)

    def _upgrading(self) -> bool:
        """Whether the request asks to switch protocols (exec, attach, port-forward)."""
        connection = {t.strip().lower() for t in self.headers.get("Connection", "").split(",")}
        return bool(self.headers.get("Upgrade")) or "upgrade" in connection

    def _forward(self, session: sessions.Session, body: bytes | None) -> None:
        hit = [("Content-Type", "application/json"), ("X-Cache", "HIT")]
        version = self.services.version
        asks_version = self.command == "GET" and urlsplit(self.path).path == "/version"
        if asks_version and version is not None:
            # Every kubernetes.core task asks; it changes only with an API server
            # upgrade, and a stale answer only affects client-side version checks.
            self._send(200, version, hit)
            return
        request = upstream.Exchange(
            self.services,
            session,
            method=self.command,
            path=self.path,
            content_type=self.headers.get("Content-Type", ""),
        )
        if self.command == "GET" and routing.accepts_json(self.headers.get("Accept", "")):
            # The caches hold JSON: a client that takes only protobuf asks the API server.
            cached = request.cached()
            if cached is not None:
                self._send(200, cached, hit)
                return
        headers = {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED_HEADERS}
        body, headers = request.outgoing(body, headers)
        with request.write(body) as write:
            try:
                response = self.services.client.forward(
                    self.command,
                    self.path,
                    body=body,
                    headers=headers,
                    # Streams end with their run instead; an answer that turns out
                    # to be a watch only by its content type keeps the bound.
                    read_timeout=None if request.is_stream() else READ_TIMEOUT,
                )
            except kube_errors.TransportError as exc:
                write.lost()
                self._send(503, _status_body(503, "ServiceUnavailable", str(exc)))
                return
            status = response.status
            self.services.audit.account(session, method=self.command, path=self.path, status=status)
            try:
                answer_type = response.headers.get("Content-Type", "")
                if request.is_stream(answer_type):
                    self._relay_stream(session, response)
                    return
                if not routing.is_json(answer_type) and self.command != "HEAD":
                    # Protobuf or another encoding: nothing in it for the proxy to read,
                    # so it is relayed as it comes instead of being held whole.
                    request.passed_through(status, write)
                    self._relay_body(response)
                    return
                data = request.answer(status, response.read(decode_content=True), write)
                self._send(status, data, _relayed(response.headers))
                request.answered()
            finally:
                response.release_conn()

    def _relay_body(self, response: Any) -> None:
        """Relay an answer the proxy does not read, chunk by chunk, as the API server sent it."""
        self.send_response(response.status)
        for key, value in _relayed(response.headers):
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for chunk in response.stream(65536, decode_content=True):
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, TransportError):
            self.close_connection = True  # either side went away mid-answer

    def _switch(self, session: sessions.Session, body: bytes | None) -> None:
        """Switch protocols with the API server and splice the two connections."""
        self.close_connection = True  # the connection becomes the stream, or is done
        headers = [(k, v) for k, v in self.headers.items() if k.lower() in _UPGRADE_HEADERS]
        try:
            answer = tunnel.open_upgrade(
                self.services.client.config,
                method=self.command,
                path=self.path,
                headers=headers,
                body=body,
            )
        except kube_errors.TransportError as exc:
            self._send(503, _status_body(503, "ServiceUnavailable", str(exc)))
            return
        self.services.audit.account(
            session, method=self.command, path=self.path, status=answer.status
        )
        with contextlib.closing(answer.connection):
            if answer.status != tunnel.SWITCHING_PROTOCOLS:
                names = {name.lower() for name in _RELAYED_HEADERS}
                relayed = [(k, v) for k, v in answer.headers if k.lower() in names]
                self._send(answer.status, answer.body, relayed)
                return
            near, far = self.connection, answer.connection

            def close() -> None:
                tunnel.cut(near)
                tunnel.cut(far)

            if not self.services.sessions.hold_stream(session, close):
                return  # the run ended meanwhile
            try:
                self.send_response_only(answer.status, answer.reason)
                for key, value in answer.headers:
                    self.send_header(key, value)
                self.end_headers()
                log.debug("stream switched", extra={"path": urlsplit(self.path).path})
                tunnel.splice(
                    near=near,
                    near_pending=tunnel.buffered(self.rfile, near),
                    far=far,
                    far_pending=answer.pending,
                )
            except OSError:
                pass  # the client went away, or the run ended, before the splice
            finally:
                self.services.sessions.drop_stream(session, close)

    def _relay_stream(self, session: sessions.Session, response: Any) -> None:
        near = self.connection

        def close() -> None:
            # Ends the read the relay waits in; fails if the relay just closed it.
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                response.shutdown()
            tunnel.cut(near)

        if not self.services.sessions.hold_stream(session, close):
            response.close()
            self._refuse(401, "Unauthorized", "no live run owns this token")
            return
        near.settimeout(None)  # a stream may stay quiet; it ends with its run
        try:
            self.send_response(response.status)
            for key, value in _relayed(response.headers):
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in response.stream(8192, decode_content=True):
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, TransportError):
            self.close_connection = True  # either side went away, or the run ended
        finally:
            self.services.sessions.drop_stream(session, close)
            response.close()  # a stream's connection is not reused


def handler_for(services: upstream.Services) -> type[BaseHTTPRequestHandler]:
    """The request handler class of a proxy made of ``services``."""
    bound = services

    class Bound(Handler):
        services = bound

    return Bound
