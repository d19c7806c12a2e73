"""One request through the per-run proxy: who sent it, where it goes, what comes back.

Part of the Ansible ↔ API stage (see the package docstring). The handler finds
the run from its token, asks :class:`~runner.proxy.server.OwnerProxy` what to
mark and what to read from the caches, forwards the rest to the API server, and
relays the answer: whole, chunk by chunk for watches and followed logs, or byte
for byte once exec, attach or port-forward switched protocols
(:mod:`runner.kube.tunnel`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, parse_qs, urlsplit

from runner import ownership
from runner.kube import errors as kube_errors
from runner.kube import paths, tunnel
from runner.kube.client import APPLY_PATCH, JSON
from runner.kube.types import GVK, Resource

if TYPE_CHECKING:
    from runner.proxy.server import OwnerProxy

log = logging.getLogger("runner.proxy")

RUNS = "/runs/"  # path prefix naming the run: /runs/<token>/api/...
_FORWARDED_HEADERS = ("content-type", "accept", "user-agent")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


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


def _credentials(path: str, authorization: str) -> tuple[str, str]:
    """The run's token and the API path: ``/runs/<token>/api/...``, or a bearer token."""
    if path.startswith(RUNS):
        token, _, rest = path[len(RUNS) :].partition("/")
        return token, "/" + rest
    scheme, _, value = authorization.partition(" ")
    return (value.strip() if scheme == "Bearer" else ""), path


def flag(query: Mapping[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[0] in ("true", "1")


def _allowed_read_only(method: str, query: Mapping[str, list[str]]) -> bool:
    """What a read-only proxy forwards: reads, and writes the API server only dry-runs."""
    return method in ("GET", "HEAD") or query.get("dryRun") == ["All"]


def _is_apply(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip() == APPLY_PATCH


def request_info(url: SplitResult, target: paths.Target | None) -> dict[str, str]:
    """The request as ansible-operator's "Skipping cache lookup" line names it."""
    info = {"path": url.path}
    if target is not None:
        info.update(
            apiGroup=target.group,
            apiVersion=target.version,
            namespace=target.namespace,
            resource=target.plural,
            name=target.name,
            subresource=target.subresource,
        )
    return info


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
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Without this, Nagle + delayed ACK adds ~40 ms to every small response.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: object) -> None:
            pass  # request logs would repeat every module call; errors are logged explicitly

        def do_GET(self) -> None:
            self._handle()

        do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET  # noqa: N815

        def _send(self, code: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
            headers = {"Content-Type": "application/json", **(headers or {})}
            self.send_response(code)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self) -> None:
            token, self.path = _credentials(self.path, self.headers.get("Authorization", ""))
            owner = proxy.owner_for(token) if token else None
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if owner is None:
                self._send(401, _status_body(401, "Unauthorized", "no live run owns this token"))
                return
            if proxy.read_only and (
                self.headers.get("Upgrade")
                or not _allowed_read_only(self.command, parse_qs(urlsplit(self.path).query))
            ):
                proxy.refuse(self.command, self.path, body)
                message = f"read-only proxy: {self.command} {urlsplit(self.path).path} refused"
                self._send(403, _status_body(403, "Forbidden", message))
                return
            if self.headers.get("Upgrade"):
                self._switch(body)  # exec, attach, port-forward
                return
            url = urlsplit(self.path)
            if self.command == "GET" and url.path == "/version" and proxy.version is not None:
                # Every kubernetes.core task asks; it changes only with an API server
                # upgrade, and a stale answer only affects client-side version checks.
                self._send(200, proxy.version, {"X-Cache": "HIT"})
                return
            target = paths.parse_path(url.path)
            resource = proxy.resource_of(target) if target else None
            query = parse_qs(url.query)
            if self.command == "GET":
                cached = proxy.cached_read(owner, target, resource, url)
                if cached is not None and resource is not None:
                    proxy.observe(owner, resource, cached)
                    self._send(200, json.dumps(cached).encode(), {"X-Cache": "HIT"})
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
            try:
                upstream = proxy.client.forward(self.command, self.path, body=body, headers=headers)
            except kube_errors.TransportError as exc:
                if write_key is not None:
                    proxy.end_write(write_key, None)
                self._send(503, _status_body(503, "ServiceUnavailable", str(exc)))
                return
            try:
                if flag(query, "watch") or flag(query, "follow"):
                    self._relay_stream(upstream)
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
                if write_key is not None:
                    # Before the run sees the answer: the watch echo of this write is known.
                    proxy.end_write(write_key, payload if 200 <= upstream.status < 300 else None)
                    write_key = None
                self._send(
                    upstream.status,
                    data,
                    {"Content-Type": upstream.headers.get("Content-Type", "application/json")},
                )
                if payload is not None and resource is not None:
                    proxy.observe(owner, resource, payload)
            finally:
                if write_key is not None:
                    proxy.end_write(write_key, None)
                upstream.release_conn()

        def _switch(self, body: bytes | None) -> None:
            """Switch protocols with the API server and splice the two connections."""
            self.close_connection = True  # the connection becomes the stream, or is done
            headers = list(self.headers.items())
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
            with contextlib.closing(answer.connection):
                if answer.status != tunnel.SWITCHING_PROTOCOLS:
                    kept = {k: v for k, v in answer.headers if k.lower() == "content-type"}
                    self._send(answer.status, answer.body, kept)
                    return
                self.send_response_only(answer.status, answer.reason)
                for key, value in answer.headers:
                    self.send_header(key, value)
                self.end_headers()
                log.debug("stream switched", extra={"path": urlsplit(self.path).path})
                tunnel.splice(
                    near=self.connection,
                    near_pending=tunnel.buffered(self.rfile, self.connection),
                    far=answer.connection,
                    far_pending=answer.pending,
                )

        def _relay_stream(self, upstream: Any) -> None:
            self.send_response(upstream.status)
            self.send_header(
                "Content-Type", upstream.headers.get("Content-Type", "application/json")
            )
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for chunk in upstream.stream(8192, decode_content=True):
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True

    return Handler
