"""The kube client's HTTP transport: the one module of the runtime that knows urllib3.

:mod:`runner.kube.client` speaks JSON, discovery and typed verbs; this carries
its requests over one pooled, keep-alive HTTPS connection set: TLS from the
client configuration, the bearer token read fresh for every request (so a
rotated token is picked up), a bound on every connect and read, and urllib3's
failures turned into :class:`runner.kube.errors.TransportError`. Thread-safe:
every worker and watch thread shares one transport through the client.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Generator
from typing import Any
from urllib.parse import urlencode

import urllib3

from runner.kube import errors
from runner.kube.config import ClientConfig

JSON = "application/json"
CONNECT_TIMEOUT = 5.0  # seconds

Query = dict[str, str | int | bool]

#: An answer as urllib3 gives it: ``status``, ``data``, ``stream()``, ``release_conn()``.
Response = urllib3.BaseHTTPResponse

#: What a streamed response (``stream()``'s) raises when its transport fails: urllib3's base
#: error, named here so that code relaying a stream needs no urllib3 of its own.
TransportError = urllib3.exceptions.HTTPError


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """The TLS settings of the client configuration (the API tunnel uses them too)."""
    ctx = ssl.create_default_context(cafile=config.ca_file)
    if config.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.cert_file and config.key_file:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    return ctx


def _bounded(read: float) -> urllib3.Timeout:
    """Connect within 5 s, or within ``read`` if that is shorter; each read within ``read``."""
    return urllib3.Timeout(connect=min(CONNECT_TIMEOUT, read), read=read)


def raise_for_status(response: Response, *, method: str, path: str) -> None:
    """Raise the :class:`runner.kube.errors.ApiError` an answer of 400 or more stands for."""
    if response.status < 400:
        return
    try:
        decoded = json.loads(response.data) if response.data else {}
    except (RecursionError, ValueError):
        decoded = {"message": response.data.decode(errors="replace")[:500]}
    body_dict = decoded if isinstance(decoded, dict) else {}
    raise errors.api_error(status=response.status, method=method, path=path, body=body_dict)


class Transport:
    """Requests to one API server with the operator's credentials. ``request_count``
    counts them, for benchmarks and the API-call metric."""

    def __init__(self, config: ClientConfig, *, timeout: float, user_agent: str) -> None:
        self._config = config
        self._timeout = timeout
        self._user_agent = user_agent
        self._pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=32,
            ssl_context=ssl_context(config) if config.server.startswith("https") else None,
            retries=False,
        )
        self._lock = threading.Lock()
        self.request_count = 0

    def _count(self) -> None:
        with self._lock:
            self.request_count += 1

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self._user_agent}
        token = self._config.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _url(self, path: str, query: Query | None) -> str:
        url = self._config.server + path
        if query:
            url += "?" + urlencode(
                {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in query.items()}
            )
        return url

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Query | None,
        body: Any,
        content_type: str | None,
        timeout: float | None,
    ) -> Response:
        """Send one request (``body`` as bytes, or JSON-encoded) and return the read answer."""
        payload: bytes | None = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            content_type = content_type or JSON
        self._count()
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

    def watch(self, path: str, *, query: Query, read_timeout: float) -> Generator[bytes]:
        """Yield the non-blank lines of a watch on ``path`` until the server closes it.

        ``read_timeout`` bounds the silence between two chunks.
        """
        self._count()
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
                        yield line
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
        read_timeout: float | None,
    ) -> Response:
        """Send a request verbatim with the operator's credentials; the answer is unread.

        See :meth:`runner.kube.client.Client.forward` for what the caller must check and do.
        """
        self._count()
        merged = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        token = self._config.bearer_token()
        if token:
            merged["Authorization"] = f"Bearer {token}"
        merged.setdefault("User-Agent", self._user_agent)
        try:
            return self._pool.request(
                method,
                self._config.server + path_and_query,
                body=body,
                headers=merged,
                preload_content=False,
                redirect=False,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read_timeout),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise errors.TransportError(f"{method} {path_and_query}: {exc}") from exc
