"""Blocking REST client over one pooled, keep-alive HTTPS connection set.

Thread-safe: every worker and watch thread shares one :class:`Client`. JSON in,
JSON out; failures become :mod:`runner.kube.errors`. Watches are streamed
line by line with a server-side timeout so a silent server is noticed.
Decoding goes through :mod:`runner.kube.decode`: a LIST item or watch line that
cannot be decoded is handed back apart (``Rejected``) instead of failing the
whole answer.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import urllib3

from runner.kube import decode, errors
from runner.kube.config import ClientConfig
from runner.kube.types import GVK, KubeObject, Resource, WatchEvent

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

Query = dict[str, str | int | bool]
CONNECT_TIMEOUT = 5.0  # seconds


def _ssl_context(config: ClientConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=config.ca_file)
    if config.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.cert_file and config.key_file:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    return ctx


#: What a streamed response (``stream()``'s) raises when its transport fails: urllib3's base
#: error, named here so that code relaying a stream needs no urllib3 of its own.
TransportError = urllib3.exceptions.HTTPError


def _bounded(read: float) -> urllib3.Timeout:
    """Connect within 5 s, or within ``read`` if that is shorter; each read within ``read``."""
    return urllib3.Timeout(connect=min(CONNECT_TIMEOUT, read), read=read)


class Client:
    """A Kubernetes API client. ``request_count`` counts calls, for benchmarks."""

    def __init__(
        self, config: ClientConfig, *, timeout: float = 30.0, user_agent: str = "playbook-operator"
    ) -> None:
        self.config = config
        self._timeout = timeout
        self._user_agent = user_agent
        self._pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=32,
            ssl_context=_ssl_context(config) if config.server.startswith("https") else None,
            retries=False,
        )
        self._resources: dict[GVK, Resource] = {}
        # The same resources by (group, version, plural): the proxy looks one up per request.
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        self._lock = threading.Lock()
        self.request_count = 0

    # -- plumbing ---------------------------------------------------------

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self._user_agent}
        token = self.config.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _url(self, path: str, query: Query | None) -> str:
        url = self.config.server + path
        if query:
            url += "?" + urlencode(
                {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in query.items()}
            )
        return url

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Query | None,
        body: Any,
        content_type: str | None,
        timeout: float | None,
    ) -> urllib3.BaseHTTPResponse:
        payload: bytes | None = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            content_type = content_type or JSON
        with self._lock:
            self.request_count += 1
        try:
            return self._pool.request(
                method,
                self._url(path, query),
                body=payload,
                headers=self._headers(content_type),
                # A caller's bound (a Lease request's time left) caps the connect too.
                timeout=_bounded(self._timeout if timeout is None else timeout),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise errors.TransportError(f"{method} {path}: {exc}") from exc

    @staticmethod
    def _raise_for_status(response: urllib3.BaseHTTPResponse, *, method: str, path: str) -> None:
        if response.status < 400:
            return
        try:
            decoded = json.loads(response.data) if response.data else {}
        except (RecursionError, ValueError):
            decoded = {"message": response.data.decode(errors="replace")[:500]}
        body_dict = decoded if isinstance(decoded, dict) else {}
        raise errors.api_error(status=response.status, method=method, path=path, body=body_dict)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON answer (``None`` when empty).

        An answer nested too deep to decode raises :class:`decode.DecodeError`.
        """
        response = self._send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        self._raise_for_status(response, method=method, path=path)
        data = response.data
        if not data:
            return None
        try:
            return decode.loads(data)
        except decode.DecodeError as exc:
            raise decode.DecodeError(f"{method} {path}: {exc}") from exc
        except ValueError:
            return {"message": data.decode(errors="replace")[:500]}

    def send(
        self,
        method: str,
        path: str,
        *,
        body: Any,
        content_type: str | None = None,
        query: Query | None = None,
    ) -> None:
        """Send one request and discard the answer: for writes whose answer could not be
        decoded (the object it echoes may be the reason for the write)."""
        response = self._send(
            method, path, query=query, body=body, content_type=content_type, timeout=None
        )
        self._raise_for_status(response, method=method, path=path)

    def list_objects(self, path: str, *, query: Query | None = None) -> decode.Listing:
        """LIST ``path``; items that cannot be decoded come back apart, not as an error."""
        response = self._send("GET", path, query=query, body=None, content_type=None, timeout=None)
        self._raise_for_status(response, method="GET", path=path)
        try:
            return decode.listing(response.data)
        except decode.DecodeError as exc:
            raise decode.DecodeError(f"GET {path}: {exc}") from exc

    def stream(
        self, path: str, *, query: Query, read_timeout: float
    ) -> Iterator[WatchEvent | decode.Rejected]:
        """Yield watch events from ``path`` until the server closes the stream.

        A line that cannot be decoded is yielded as :class:`decode.Rejected` (what
        could be read of its object, and why), so one bad object ends no stream.

        ``read_timeout`` bounds the silence between two lines; pair it with the
        server-side ``timeoutSeconds`` (and bookmarks) so a dead server is noticed.
        """
        with self._lock:
            self.request_count += 1
        try:
            response = self._pool.request(
                "GET",
                self._url(path, {**query, "watch": True}),
                headers=self._headers(None),
                preload_content=False,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read_timeout),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise errors.TransportError(f"WATCH {path}: {exc}") from exc
        try:
            if response.status >= 400:
                try:
                    body = json.loads(response.data or b"{}")
                except (RecursionError, ValueError):
                    body = {}
                raise errors.api_error(status=response.status, method="WATCH", path=path, body=body)
            buffer = b""
            for chunk in response.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield decode.event(line)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.TransportError(f"WATCH {path}: {exc}") from exc
        finally:
            response.release_conn()

    def forward(
        self,
        method: str,
        path_and_query: str,
        *,
        body: bytes | None,
        headers: dict[str, str],
        read_timeout: float | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request verbatim (for the API proxy) and return the unread response.

        The caller's own ``Authorization`` is replaced by the operator's credentials.
        ``path_and_query`` must be an absolute path (``/...``, not ``//...``): it is
        appended to the server's URL, so anything else could name another host.
        ``read_timeout`` bounds each read of the answer (``None``: streams, which
        end when their caller cuts them). The caller must ``release_conn()`` the
        response.
        """
        if not path_and_query.startswith("/") or path_and_query.startswith("//"):
            raise errors.TransportError(f"{method}: not an absolute API path: {path_and_query!r}")
        with self._lock:
            self.request_count += 1
        merged = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        token = self.config.bearer_token()
        if token:
            merged["Authorization"] = f"Bearer {token}"
        merged.setdefault("User-Agent", self._user_agent)
        try:
            return self._pool.request(
                method,
                self.config.server + path_and_query,
                body=body,
                headers=merged,
                preload_content=False,
                redirect=False,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read_timeout),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise errors.TransportError(f"{method} {path_and_query}: {exc}") from exc

    # -- discovery --------------------------------------------------------

    def resource(self, gvk: GVK) -> Resource:
        """How ``gvk`` is served; discovered once per group/version, then cached."""
        cached = self._resources.get(gvk)
        if cached is None:
            self.discover(gvk.group, gvk.version)
            cached = self._resources.get(gvk)
        if cached is None:
            raise errors.NotFoundError(
                status=404,
                method="DISCOVER",
                path=f"{gvk.group}/{gvk.version}",
                body={"reason": "NotFound", "message": f"kind {gvk.kind} is not served"},
            )
        return cached

    def resource_for(self, *, group: str, version: str, plural: str) -> Resource | None:
        """The resource served at ``plural`` in group/version (None if unknown)."""
        cached = self._by_path.get((group, version, plural))
        if cached is not None:
            return cached
        try:
            found = self.discover(group, version)
        except errors.ApiError:
            return None
        return next((r for r in found if r.plural == plural), None)

    def discover(self, group: str, version: str) -> list[Resource]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        listing = self.request("GET", path)
        subs: dict[str, set[str]] = {}
        for item in listing.get("resources", []):
            name = str(item["name"])
            if "/" in name:
                parent, _, sub = name.partition("/")
                subs.setdefault(parent, set()).add(sub)
        found: list[Resource] = []
        for item in listing.get("resources", []):
            name = str(item["name"])
            if "/" in name:
                continue
            found.append(
                Resource(
                    gvk=GVK(group, version, str(item["kind"])),
                    plural=name,
                    namespaced=bool(item.get("namespaced")),
                    verbs=frozenset(item.get("verbs", [])),
                    subresources=frozenset(subs.get(name, set())),
                )
            )
        with self._lock:
            self._resources.update({r.gvk: r for r in found})
            self._by_path.update({(group, version, r.plural): r for r in found})
        return found

    def forget_discovery(self) -> None:
        """Drop cached discovery (after CRDs change)."""
        with self._lock:
            self._resources.clear()
            self._by_path.clear()

    # -- typed helpers ----------------------------------------------------

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        res = self.resource(gvk)
        obj: KubeObject = self.request("GET", res.path(namespace=namespace, name=name))
        return obj

    def list(
        self, gvk: GVK, *, namespace: str | None = None, query: Query | None = None
    ) -> KubeObject:
        res = self.resource(gvk)
        obj: KubeObject = self.request("GET", res.path(namespace=namespace), query=query)
        return obj

    def create(self, gvk: GVK, body: KubeObject, *, namespace: str | None = None) -> KubeObject:
        res = self.resource(gvk)
        obj: KubeObject = self.request("POST", res.path(namespace=namespace), body=body)
        return obj

    def update(self, gvk: GVK, body: KubeObject, *, subresource: str = "") -> KubeObject:
        res = self.resource(gvk)
        meta = body["metadata"]
        path = res.path(namespace=meta.get("namespace"), name=meta["name"], subresource=subresource)
        obj: KubeObject = self.request("PUT", path, body=body)
        return obj

    def patch(
        self,
        gvk: GVK,
        *,
        name: str,
        namespace: str | None = None,
        body: Any,
        content_type: str = MERGE_PATCH,
        subresource: str = "",
        query: Query | None = None,
    ) -> KubeObject:
        res = self.resource(gvk)
        path = res.path(namespace=namespace, name=name, subresource=subresource)
        obj: KubeObject = self.request(
            "PATCH", path, body=body, content_type=content_type, query=query
        )
        return obj

    def delete(self, gvk: GVK, *, name: str, namespace: str | None = None) -> None:
        res = self.resource(gvk)
        self.request("DELETE", res.path(namespace=namespace, name=name))
