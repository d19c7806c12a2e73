"""The metrics' HTTP side: ``GET /metrics`` (and ``/debug/rbac``) and roles' ``POST``.

Both are :class:`runner.base.http.listener.App` s served by the bounded listener. With
``--metrics-require-rbac`` the manager passes an :data:`Authorize` check
(:class:`runner.operations.access.TokenAuthorizer`), run on the request's
``Authorization`` header before anything else is read. What ``/metrics`` answers is
:func:`runner.prometheus.exposition.exposition` of the runtime's one registry.

``GET /debug/rbac`` (the RBAC record) tells which APIs the operator's runs use and
which their RBAC lacked: a loopback client (``playbook-operator rbac --from
http://127.0.0.1:8080/debug/rbac`` on the host, or through ``kubectl port-forward``)
is checked as for ``/metrics``; any other must carry a token allowed to ``get`` the
non-resource URL ``/debug/rbac`` itself (``rbac_authorize``), whatever
``--metrics-require-rbac`` says. The client's address is
:func:`runner.operations.peers.current`: unknown counts as not loopback.
"""

from __future__ import annotations

import http
import json
from collections.abc import Callable
from typing import Any, Protocol

from runner.base.http import connections, http1, listener
from runner.operations import peers
from runner.prometheus import exposition as exposition_mod
from runner.prometheus import registry as registry_mod

#: Given the request's Authorization header, the HTTP status to answer with (200: serve).
Authorize = Callable[[str | None], int]

#: The RBAC record's path on the metrics listener.
DEBUG_RBAC = "/debug/rbac"

#: Roles' payloads are a name, a description and one value or observation.
CUSTOM_LIMITS = connections.Limits(max_body=64 * 1024)


class Exposed(Protocol):
    """What ``GET /metrics`` writes: :class:`runner.operations.metrics.runtime.Metrics`."""

    @property
    def registry(self) -> registry_mod.Registry: ...


class CustomSink(Protocol):
    """Where roles' payloads go: :class:`runner.operations.metrics.runtime.Metrics`."""

    def apply_custom(self, payload: dict[str, Any]) -> None: ...


def exposition_handler(
    metrics: Exposed,
    *,
    authorize: Authorize | None = None,
    rbac: Callable[[], dict[str, Any]] | None = None,
    rbac_authorize: Authorize | None = None,
    peer: Callable[[], str] = peers.current,
) -> listener.App:
    """GET /metrics, and with ``rbac`` GET /debug/rbac (the RBAC record as JSON).

    Checked before anything else is read: /metrics, and /debug/rbac from a loopback
    ``peer``, with ``authorize`` (None: served); /debug/rbac from any other client
    with ``rbac_authorize`` (None: as /metrics — the runtime always passes one)."""

    def debug(request: http1.Request) -> bool:
        return rbac is not None and request.path == DEBUG_RBAC

    def handle(request: http1.Request) -> http1.Response:
        if request.method != "GET":
            return http1.text(405, "method not allowed")
        if rbac is not None and debug(request):
            return _json(200, rbac())
        if not request.path.startswith("/metrics"):
            return http1.text(404, "not found")
        return http1.Response(
            200,
            exposition_mod.exposition(metrics.registry),
            content_type=registry_mod.CONTENT_TYPE,
        )

    def check(request: http1.Request) -> http1.Response | None:
        decide = authorize
        if rbac_authorize is not None and debug(request) and not peers.is_loopback(peer()):
            decide = rbac_authorize
        if decide is None:
            return None
        code = decide(request.headers.get("authorization"))
        if code == 200:
            return None
        return http1.text(code, http.HTTPStatus(code).phrase.lower())

    checked = authorize is not None or (rbac is not None and rbac_authorize is not None)
    return listener.App(handle=handle, authorize=check if checked else None)


def custom_handler(metrics: CustomSink) -> listener.App:
    """POST /metrics with operator-sdk's payload: 200 ``{"ok": true}`` or 400 and the reason."""

    def handle(request: http1.Request) -> http1.Response:
        if request.method != "POST":
            return _json(405, {"error": "POST a metric"})
        try:
            payload = json.loads(request.body or b"{}")
            if not isinstance(payload, dict):
                raise ValueError("expected a JSON object")
            metrics.apply_custom(payload)
        except (ValueError, TypeError) as exc:
            return _json(400, {"error": str(exc)})
        return _json(200, {"ok": True})

    return listener.App(handle=handle, limits=CUSTOM_LIMITS)


def _json(code: int, body: dict[str, Any]) -> http1.Response:
    return http1.Response(code, json.dumps(body).encode(), content_type="application/json")
