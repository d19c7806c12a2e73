"""The metrics' HTTP side: ``GET /metrics`` (and ``/debug/rbac``) and roles' ``POST``.

Both are :class:`runner.base.listener.App` s served by the bounded listener. With
``--metrics-require-rbac`` the manager passes an :data:`Authorize` check
(:class:`runner.operations.access.TokenAuthorizer`), run on the request's
``Authorization`` header before anything else is read. What ``/metrics`` answers is
:func:`runner.metrics.exposition.exposition` of the runtime's one registry.
"""

from __future__ import annotations

import http
import json
from collections.abc import Callable
from typing import Any, Protocol

from runner.base import listener
from runner.metrics import exposition as exposition_mod
from runner.metrics import registry as registry_mod

#: Given the request's Authorization header, the HTTP status to answer with (200: serve).
Authorize = Callable[[str | None], int]

#: Roles' payloads are a name, a description and one value or observation.
CUSTOM_LIMITS = listener.Limits(max_body=64 * 1024)


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
) -> listener.App:
    """GET /metrics, and with ``rbac`` GET /debug/rbac (the RBAC record as JSON); with
    ``authorize``, the token is checked before anything else is read, for both."""

    def handle(request: listener.Request) -> listener.Response:
        if request.method != "GET":
            return listener.text(405, "method not allowed")
        if rbac is not None and request.path == "/debug/rbac":
            return _json(200, rbac())
        if not request.path.startswith("/metrics"):
            return listener.text(404, "not found")
        return listener.Response(
            200,
            exposition_mod.exposition(metrics.registry),
            content_type=registry_mod.CONTENT_TYPE,
        )

    check: listener.Authorize | None = None
    if authorize is not None:
        decide = authorize

        def check(request: listener.Request) -> listener.Response | None:
            code = decide(request.headers.get("authorization"))
            if code == 200:
                return None
            return listener.text(code, http.HTTPStatus(code).phrase.lower())

    return listener.App(handle=handle, authorize=check)


def custom_handler(metrics: CustomSink) -> listener.App:
    """POST /metrics with operator-sdk's payload: 200 ``{"ok": true}`` or 400 and the reason."""

    def handle(request: listener.Request) -> listener.Response:
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


def _json(code: int, body: dict[str, Any]) -> listener.Response:
    return listener.Response(code, json.dumps(body).encode(), content_type="application/json")
