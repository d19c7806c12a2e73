"""Blocking REST client: JSON in, JSON out, over one pooled, keep-alive HTTPS connection set.

Thread-safe: every worker and watch thread shares one :class:`Client`. Requests
travel through :mod:`runner.kube.transport` (the one module that knows urllib3);
kinds are mapped to REST paths by :mod:`runner.kube.discovery`; failures become
:mod:`runner.kube.errors`. Watches are streamed line by line with a server-side
timeout so a silent server is noticed. Decoding goes through
:mod:`runner.kube.decode`: a LIST item or watch line that cannot be decoded is
handed back apart (``Rejected``) instead of failing the whole answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runner.kube import decode, discovery, errors, transport
from runner.kube.config import ClientConfig
from runner.kube.types import GVK, KubeObject, Resource, WatchEvent

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class Client:
    """A Kubernetes API client. ``request_count`` counts calls, for benchmarks."""

    def __init__(
        self, config: ClientConfig, *, timeout: float = 30.0, user_agent: str = "playbook-operator"
    ) -> None:
        self.config = config
        self._transport = transport.Transport(config, timeout=timeout, user_agent=user_agent)
        self._discovery = discovery.Discovery(lambda path: self.request("GET", path))

    @property
    def request_count(self) -> int:
        return self._transport.request_count

    # -- requests ---------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: transport.Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON answer (``None`` when empty).

        An answer nested too deep to decode raises :class:`decode.DecodeError`.
        """
        response = self._transport.send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        transport.raise_for_status(response, method=method, path=path)
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
        query: transport.Query | None = None,
    ) -> None:
        """Send one request and discard the answer: for writes whose answer could not be
        decoded (the object it echoes may be the reason for the write)."""
        response = self._transport.send(
            method, path, query=query, body=body, content_type=content_type, timeout=None
        )
        transport.raise_for_status(response, method=method, path=path)

    def list_objects(self, path: str, *, query: transport.Query | None = None) -> decode.Listing:
        """LIST ``path``; items that cannot be decoded come back apart, not as an error."""
        response = self._transport.send(
            "GET", path, query=query, body=None, content_type=None, timeout=None
        )
        transport.raise_for_status(response, method="GET", path=path)
        try:
            return decode.listing(response.data)
        except decode.DecodeError as exc:
            raise decode.DecodeError(f"GET {path}: {exc}") from exc

    def stream(
        self, path: str, *, query: transport.Query, read_timeout: float
    ) -> Iterator[WatchEvent | decode.Rejected]:
        """Yield watch events from ``path`` until the server closes the stream.

        A line that cannot be decoded is yielded as :class:`decode.Rejected` (what
        could be read of its object, and why), so one bad object ends no stream.

        ``read_timeout`` bounds the silence between two lines; pair it with the
        server-side ``timeoutSeconds`` (and bookmarks) so a dead server is noticed.
        """
        lines = self._transport.watch(path, query=query, read_timeout=read_timeout)
        try:
            for line in lines:
                yield decode.event(line)
        finally:
            lines.close()  # now, not when collected: it hands the connection back

    def forward(
        self,
        method: str,
        path_and_query: str,
        *,
        body: bytes | None,
        headers: dict[str, str],
        read_timeout: float | None = None,
    ) -> transport.Response:
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
        return self._transport.forward(
            method, path_and_query, body=body, headers=headers, read_timeout=read_timeout
        )

    # -- discovery --------------------------------------------------------

    def resource(self, gvk: GVK) -> Resource:
        """How ``gvk`` is served; discovered once per group/version, then cached."""
        return self._discovery.resource(gvk)

    def resource_for(self, *, group: str, version: str, plural: str) -> Resource | None:
        """The resource served at ``plural`` in group/version (None if unknown)."""
        return self._discovery.resource_for(group=group, version=version, plural=plural)

    def discover(self, group: str, version: str) -> list[Resource]:
        return self._discovery.discover(group, version)

    def forget_discovery(self) -> None:
        """Drop cached discovery (after CRDs change)."""
        self._discovery.forget()

    # -- typed helpers ----------------------------------------------------

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        res = self.resource(gvk)
        obj: KubeObject = self.request("GET", res.path(namespace=namespace, name=name))
        return obj

    def list(
        self, gvk: GVK, *, namespace: str | None = None, query: transport.Query | None = None
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
        query: transport.Query | None = None,
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
