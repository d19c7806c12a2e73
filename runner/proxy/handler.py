"""One request through the per-run proxy: who sent it, where it goes, what comes back.

Part of the Ansible ↔ API stage (see the package docstring). The handler finds
the run from its token, asks :class:`~runner.proxy.server.OwnerProxy` what to
mark and what to read from the caches, forwards the rest to the API server, and
relays the answer: whole, chunk by chunk for watches and followed logs, or byte
for byte once exec, attach or port-forward switched protocols
(:mod:`runner.kube.tunnel`). Streams end when their run does.

The request target is appended to the API server's URL, so only a plain API path
is forwarded (:func:`route`): anything else — ``@host/...``, an absolute URL,
``//host/...`` — could name another host and hand it the operator's credentials.
What the listener bounds (timeouts, connections, body size) is in
:mod:`runner.proxy.listener`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from runner.kube import errors as kube_errors
from runner.kube import paths, tunnel
from runner.kube.client import APPLY_PATCH, JSON, TransportError
from runner.kube.types import GVK, Resource
from runner.proxy import listener, ownership

if TYPE_CHECKING:
    from runner.proxy.server import OwnerProxy, Session

log = logging.getLogger("runner.proxy")

RUNS = "/runs/"  # path prefix naming the run: /runs/<token>/api/...
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
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # secrets.token_urlsafe's alphabet
# An origin-form API path: "/" and a name (so the server's URL keeps its host, and
# "@host" cannot become one), printable ASCII without "#" or a backslash (which some
# parsers read as a slash).
_API_PATH = re.compile(r"/(?:[A-Za-z.][!-~]*)?")


class BadTargetError(ValueError):
    """A request target that is not a run's API path; answered 400."""


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


def route(target: str, authorization: str) -> tuple[str, str]:
    """The run's token and the API path of a request target, or :class:`BadTargetError`.

    ``/runs/<token>/api/...`` (kubeconfig clients), or an API path with a bearer
    token. The API path is appended to the API server's URL as is, so it must be
    a path on that server: ``@host/...``, ``http://host/...`` or ``//host/...``
    are refused, and so are dot segments (the forwarded path would not be the one
    checked here).
    """
    token = ""
    path = target
    if target.startswith(RUNS):
        token, slash, rest = target[len(RUNS) :].partition("/")
        if not _TOKEN.fullmatch(token) or not slash:
            raise BadTargetError("expected /runs/<token>/<API path>")
        path = "/" + rest
    else:
        scheme, _, value = authorization.partition(" ")
        token = value.strip() if scheme == "Bearer" else ""
    if not _API_PATH.fullmatch(path) or "#" in path or "\\" in path:
        raise BadTargetError("expected an API path: /api/..., /apis/..., /version ...")
    segments = urlsplit(path).path.split("/")
    if any(unquote(segment) in (".", "..") for segment in segments):
        raise BadTargetError("dot segments are not forwarded")
    return token, path


def flag(query: Mapping[str, list[str]], name: str) -> bool:
    """A boolean query parameter as the API server reads it: set, and not "false" or "0"."""
    values = query.get(name) or []
    return bool(values) and values[0].lower() not in ("false", "0")


def _is_stream(url: SplitResult, query: Mapping[str, list[str]], content_type: str) -> bool:
    """Whether an answer is relayed as it comes: a watch (however asked for) or followed logs."""
    return (
        flag(query, "watch")
        or flag(query, "follow")
        or _is_watch_path(url.path)
        or "stream=watch" in content_type
    )


def _is_watch_path(path: str) -> bool:
    """The deprecated watch paths: /api/v1/watch/..., /apis/<group>/<version>/watch/..."""
    parts = path.split("/")
    return (parts[1:2] == ["api"] and parts[3:4] == ["watch"]) or (
        parts[1:2] == ["apis"] and parts[4:5] == ["watch"]
    )


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
    """What a read-only proxy forwards: reads, and writes the API server only dry-runs."""
    return method in ("GET", "HEAD") or query.get("dryRun") == ["All"]


def _is_apply(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip() == APPLY_PATCH


def request_info(url: SplitResult, target: paths.Target | None) -> dict[str, object]:
    """A GET as ansible-operator's "Skipping cache lookup" line names it: Kubernetes'
    RequestInfo, field for field, so log queries built on that line keep matching."""
    if target is None:
        return {"IsResourceRequest": False, "Path": url.path, "Verb": "get"}
    watching = parse_qs(url.query).get("watch", [""])[0] in ("1", "true")
    parts = [p for p in (target.plural, target.name, target.subresource) if p]
    return {
        "IsResourceRequest": True,
        "Path": url.path,
        "Verb": "watch" if watching else "get" if target.name else "list",
        "APIPrefix": "api" if not target.group else "apis",
        "APIGroup": target.group,
        "APIVersion": target.version,
        "Namespace": target.namespace,
        "Resource": target.plural,
        "Subresource": target.subresource,
        "Name": target.name,
        "Parts": parts,
    }


def _write_key(
    method: str, target: paths.Target | None, resource: Resource | None, body: bytes | None
) -> tuple[GVK, str, str] | None:
    """Which object a mutating request writes, when it can be told before the answer."""
    if method not in ("POST", "PUT", "PATCH") or target is None or resource is None:
        return None
    if target.subresource and target.subresource != "status":
        return None
    name = target.name
    if not name and body:
        with contextlib.suppress(ValueError, AttributeError):
            name = str((json.loads(body).get("metadata") or {}).get("name") or "")
    return (resource.gvk, target.namespace, name) if name else None


def handler_for(proxy: OwnerProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(listener.BoundedHandler):
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
            if length > listener.MAX_BODY:
                message = f"request body of {length} bytes is larger than {listener.MAX_BODY}"
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
                token, self.path = route(self.path, self.headers.get("Authorization", ""))
            except BadTargetError as exc:
                self._refuse(400, "BadRequest", f"not a run's API path: {exc}")
                return
            session = proxy.session_for(token) if token else None
            if session is None:
                self._refuse(401, "Unauthorized", "no live run owns this token")
                return
            ok, body = self._body()
            if not ok:
                return
            if proxy.read_only and (
                self.headers.get("Upgrade")
                or not _allowed_read_only(self.command, parse_qs(urlsplit(self.path).query))
            ):
                proxy.refuse(self.command, self.path, body)
                proxy.account(session, method=self.command, path=self.path)
                message = f"read-only proxy: {self.command} {urlsplit(self.path).path} refused"
                self._send(403, _status_body(403, "Forbidden", message))
                return
            if self.headers.get("Upgrade"):
                self._switch(session, body)  # exec, attach, port-forward
                return
            self._forward(session, body)

        def _forward(self, session: Session, body: bytes | None) -> None:
            owner = session.owner
            url = urlsplit(self.path)
            if self.command == "GET" and url.path == "/version" and proxy.version is not None:
                # Every kubernetes.core task asks; it changes only with an API server
                # upgrade, and a stale answer only affects client-side version checks.
                self._send(
                    200, proxy.version, [("Content-Type", "application/json"), ("X-Cache", "HIT")]
                )
                return
            target = paths.parse_path(url.path)
            resource = proxy.resource_of(target) if target else None
            query = parse_qs(url.query)
            if self.command == "GET":
                cached = proxy.cached_read(session, target, resource, url)
                if cached is not None and resource is not None:
                    proxy.account(session, method="GET", path=self.path, cached=True)
                    proxy.observe(owner, resource, cached)
                    self._send(
                        200,
                        json.dumps(cached).encode(),
                        [("Content-Type", "application/json"), ("X-Cache", "HIT")],
                    )
                    return
            headers = {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED_HEADERS}
            applying = False  # a server-side apply whose 201 answer means "created by us"
            if proxy.inject_owner and target and resource and body and not target.subresource:
                if self.command == "POST" and not target.name:
                    body = proxy.rewrite_body(owner, target, resource, body)
                elif self.command == "PUT" and target.name:
                    body = proxy.keep_owner(owner, target, resource, body)
                elif self.command == "PATCH" and target.name:
                    applying = _is_apply(self.headers.get("Content-Type", ""))
                    if applying:  # the created object must be readable to be adopted
                        headers = {k: v for k, v in headers.items() if k.lower() != "accept"}
                        headers["Accept"] = JSON
            write_key = _write_key(self.command, target, resource, body)
            if write_key is not None:
                proxy.begin_write(write_key)
            # What this run's later reads of the object must not take from a stale cache.
            written = write_key
            deleting = self.command == "DELETE" and target and not target.subresource
            if deleting and target and resource and target.name:
                written = (resource.gvk, target.namespace, target.name)
            try:
                upstream = proxy.client.forward(
                    self.command,
                    self.path,
                    body=body,
                    headers=headers,
                    # Streams end with their run instead; an answer that turns out
                    # to be a watch only by its content type keeps the bound.
                    read_timeout=None if _is_stream(url, query, "") else READ_TIMEOUT,
                )
            except kube_errors.TransportError as exc:
                if write_key is not None:
                    proxy.end_write(write_key, None)
                if written is not None:
                    proxy.wrote(session, written, None)  # it may or may not have happened
                self._send(503, _status_body(503, "ServiceUnavailable", str(exc)))
                return
            proxy.account(session, method=self.command, path=self.path, status=upstream.status)
            try:
                if _is_stream(url, query, upstream.headers.get("Content-Type", "")):
                    self._relay_stream(session, upstream)
                    return
                data = upstream.read(decode_content=True)
                if self.command == "GET" and url.path == "/version" and upstream.status == 200:
                    proxy.version = data
                payload: Any = None
                if target and resource and 200 <= upstream.status < 300 and not target.subresource:
                    with contextlib.suppress(ValueError):
                        payload = json.loads(data)
                if applying and upstream.status == 201 and isinstance(payload, dict):
                    assert target is not None and resource is not None
                    proxy.remember(payload)
                    if "dryRun" in query:  # nothing was created: show what would be
                        ownership.inject(
                            owner,
                            payload,
                            child_namespaced=resource.namespaced,
                            child_namespace=target.namespace,
                        )
                    else:
                        payload = proxy.adopt(owner, target, resource, payload)
                    data = json.dumps(payload).encode()
                succeeded = 200 <= upstream.status < 300
                if written is not None and succeeded and "dryRun" not in query:
                    # Before the run sees the answer: its next read of the object is fresh.
                    proxy.wrote(session, written, None if self.command == "DELETE" else payload)
                if write_key is not None:
                    # Before the run sees the answer: the watch echo of this write is known.
                    proxy.end_write(write_key, payload if succeeded else None)
                    write_key = None
                self._send(upstream.status, data, _relayed(upstream.headers))
                if payload is not None and resource is not None:
                    proxy.observe(owner, resource, payload)
            finally:
                if write_key is not None:
                    proxy.end_write(write_key, None)
                upstream.release_conn()

        def _switch(self, session: Session, body: bytes | None) -> None:
            """Switch protocols with the API server and splice the two connections."""
            self.close_connection = True  # the connection becomes the stream, or is done
            headers = [(k, v) for k, v in self.headers.items() if k.lower() in _UPGRADE_HEADERS]
            try:
                answer = tunnel.open_upgrade(
                    proxy.client.config,
                    method=self.command,
                    path=self.path,
                    headers=headers,
                    body=body,
                )
            except kube_errors.TransportError as exc:
                self._send(503, _status_body(503, "ServiceUnavailable", str(exc)))
                return
            proxy.account(session, method=self.command, path=self.path, status=answer.status)
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

                if not proxy.hold_stream(session, close):
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
                    proxy.drop_stream(session, close)

        def _relay_stream(self, session: Session, upstream: Any) -> None:
            near = self.connection

            def close() -> None:
                # Ends the read the relay waits in; fails if the relay just closed it.
                with contextlib.suppress(ValueError, RuntimeError, OSError):
                    upstream.shutdown()
                tunnel.cut(near)

            if not proxy.hold_stream(session, close):
                upstream.close()
                self._refuse(401, "Unauthorized", "no live run owns this token")
                return
            near.settimeout(None)  # a stream may stay quiet; it ends with its run
            try:
                self.send_response(upstream.status)
                for key, value in _relayed(upstream.headers):
                    self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in upstream.stream(8192, decode_content=True):
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (OSError, TransportError):
                self.close_connection = True  # either side went away, or the run ended
            finally:
                proxy.drop_stream(session, close)
                upstream.close()  # a stream's connection is not reused

    return Handler
