"""The API proxy each Ansible run talks to: owner references without role changes.

Roles written for operator-sdk never set ownerReferences; the runtime must. Like
operator-sdk, every run gets a kubeconfig pointing at a local proxy; unlike
operator-sdk, the run is identified by a random per-run bearer token rather than
a base64 user name, and requests without a live token are refused — so no other
local process can borrow the operator's credentials through the proxy.

For a request from a run the proxy knows the owning custom resource and:

- on create (POST), replace (PUT) and server-side apply (PATCH apply-patch) of a
  resource, injects an ownerReference to the owner — or, when the child lives in
  another namespace or is cluster-scoped under a namespaced owner, operator-sdk's
  ``operator-sdk/primary-resource`` and ``-type`` annotations;
- reports every child it sees created or read back (``on_child``), so the
  manager can start the dependent watch for that kind — also after a restart;
- serves GETs of single objects from the runner's informer caches when it holds
  them (``X-Cache: HIT``); misses and everything else go to the API server.

Streams (watch, follow) are relayed; exec/attach/port-forward upgrades are not.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from runner import ownership
from runner.kube import errors as kube_errors
from runner.kube import paths
from runner.kube.client import APPLY_PATCH, Client
from runner.kube.types import GVK, KubeObject, Resource

log = logging.getLogger("runner.proxy")

_FORWARDED_HEADERS = ("content-type", "accept", "user-agent")
_OWN_WRITES_KEPT = 4096
_WRITE_WAIT = 5.0  # seconds an informer waits for an in-flight write's answer


ChildObserver = Callable[[ownership.Owner, Resource, KubeObject], None]
CacheLookup = Callable[[Resource, str, str], KubeObject | None]


class OwnerProxy:
    """A local HTTP proxy to the API server, bound to 127.0.0.1."""

    def __init__(
        self,
        *,
        client: Client,
        port: int = 0,
        inject_owner: bool = True,
        on_child: ChildObserver | None = None,
        cache: CacheLookup | None = None,
    ) -> None:
        self.client = client
        self.inject_owner = inject_owner
        self.on_child = on_child
        self.cache = cache
        self._sessions: dict[str, ownership.Owner] = {}
        self._lock = threading.Lock()
        self._writes_done = threading.Condition(self._lock)
        self._in_flight: collections.Counter[tuple[GVK, str, str]] = collections.Counter()
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-proxy-"))
        os.chmod(self._dir, 0o700)  # per-run kubeconfigs hold live tokens
        self._server = _Server(("127.0.0.1", port), _handler_for(self))
        self.version: bytes | None = None  # the API server's /version answer, once seen
        # (uid, resourceVersion) of objects our runs wrote: their watch events are echoes
        # of our own changes and must not trigger yet another reconcile.
        self._own_writes: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="proxy", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        log.info("API proxy serving", extra={"address": f"127.0.0.1:{self.port}"})

    def shutdown(self) -> None:
        self._server.shutdown()
        shutil.rmtree(self._dir, ignore_errors=True)

    def owner_for(self, token: str) -> ownership.Owner | None:
        with self._lock:
            return self._sessions.get(token)

    @contextlib.contextmanager
    def for_owner(self, owner_obj: KubeObject) -> Iterator[Mapping[str, str]]:
        """A run's environment: a private kubeconfig naming this proxy and a fresh token."""
        owner = ownership.Owner.of(owner_obj)
        token = secrets.token_urlsafe(24)
        path = self._dir / f"{token[:12]}.kubeconfig"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "run", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "run",
                    "context": {
                        "cluster": "proxy",
                        "user": "run",
                        "namespace": owner.namespace or "default",
                    },
                }
            ],
            "current-context": "run",
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(kubeconfig, handle)
        with self._lock:
            self._sessions[token] = owner
        try:
            yield {"K8S_AUTH_KUBECONFIG": str(path), "KUBECONFIG": str(path)}
        finally:
            with self._lock:
                self._sessions.pop(token, None)
            path.unlink(missing_ok=True)

    # -- request handling (called from handler threads) --------------------

    def resource_of(self, target: paths.Target) -> Resource | None:
        try:
            return self.client.resource_for(
                group=target.group, version=target.version, plural=target.plural
            )
        except kube_errors.KubeError:
            return None

    def rewrite_body(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, body: bytes
    ) -> bytes:
        try:
            child = json.loads(body)
        except ValueError:
            return body  # not JSON (e.g. protobuf): pass through untouched
        if not isinstance(child, dict):
            return body
        namespace = target.namespace or str((child.get("metadata") or {}).get("namespace") or "")
        ownership.inject(
            owner, child, child_namespaced=resource.namespaced, child_namespace=namespace
        )
        return json.dumps(child).encode()

    def begin_write(self, key: tuple[GVK, str, str]) -> None:
        with self._lock:
            self._in_flight[key] += 1

    def end_write(self, key: tuple[GVK, str, str], payload: Any) -> None:
        """Forget the in-flight write; remember the version it produced."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        with self._lock:
            self._in_flight[key] -= 1
            if self._in_flight[key] <= 0:
                del self._in_flight[key]
            if isinstance(meta, dict) and meta.get("uid"):
                self._own_writes[(str(meta["uid"]), str(meta.get("resourceVersion", "")))] = None
                while len(self._own_writes) > _OWN_WRITES_KEPT:
                    self._own_writes.popitem(last=False)
            self._writes_done.notify_all()

    def is_own_write(self, obj: KubeObject) -> bool:
        """True if ``obj`` is exactly the version one of our runs wrote.

        The API server may deliver the watch event before the write's response
        reaches us; if a write to this object is in flight, wait for it (briefly).
        """
        meta = obj.get("metadata") or {}
        key = (GVK.of(obj), str(meta.get("namespace") or ""), str(meta.get("name", "")))
        version = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
        with self._lock:
            self._writes_done.wait_for(lambda: key not in self._in_flight, timeout=_WRITE_WAIT)
            return version in self._own_writes

    def observe(self, owner: ownership.Owner, resource: Resource, payload: Any) -> None:
        if self.on_child is None or not isinstance(payload, dict):
            return
        items = payload.get("items") if "items" in payload else [payload]
        for item in items or []:
            if isinstance(item, dict) and owner.owns(item):
                self.on_child(owner, resource, item)
                return  # one sighting per response is enough to start a watch


class _Server(ThreadingHTTPServer):
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


def _handler_for(proxy: OwnerProxy) -> type[BaseHTTPRequestHandler]:
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
            auth = self.headers.get("Authorization", "")
            owner = proxy.owner_for(auth[7:]) if auth.startswith("Bearer ") else None
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if owner is None:
                self._send(401, _status_body(401, "Unauthorized", "no live run owns this token"))
                return
            if self.headers.get("Upgrade"):
                self._send(
                    501,
                    _status_body(
                        501, "NotImplemented", "exec, attach and port-forward are not proxied"
                    ),
                )
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
            if (
                target
                and resource
                and self.command == "GET"
                and target.name
                and not target.subresource
                and proxy.cache
            ):
                cached = proxy.cache(resource, target.namespace, target.name)
                if cached is not None:
                    proxy.observe(owner, resource, cached)
                    self._send(200, json.dumps(cached).encode(), {"X-Cache": "HIT"})
                    return
            content_type = self.headers.get("Content-Type", "")
            if (
                proxy.inject_owner
                and target
                and resource
                and body
                and not target.subresource
                and (
                    (self.command == "POST" and not target.name)
                    or (self.command == "PUT" and target.name)
                    or (
                        self.command == "PATCH"
                        and content_type.startswith(APPLY_PATCH.split("+")[0])
                        and "apply" in content_type
                    )
                )
            ):
                body = proxy.rewrite_body(owner, target, resource, body)
            headers = {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED_HEADERS}
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
                streaming = query.get("watch", ["false"])[0] in ("true", "1") or query.get(
                    "follow", ["false"]
                )[0] in ("true", "1")
                if streaming:
                    self._relay_stream(upstream)
                    return
                data = upstream.read(decode_content=True)
                if self.command == "GET" and url.path == "/version" and upstream.status == 200:
                    proxy.version = data
                payload: Any = None
                if target and resource and 200 <= upstream.status < 300 and not target.subresource:
                    with contextlib.suppress(ValueError):
                        payload = json.loads(data)
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
