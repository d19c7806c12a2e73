"""Who reads GET /debug/rbac: a loopback client as for /metrics; any other client only
with a token allowed ``get`` on ``/debug/rbac`` itself, whatever /metrics requires."""

from __future__ import annotations

import pytest

from runner.base.http import http1, listener
from runner.operations.metrics import endpoint, runtime
from runner.rbac import record

#: What the fake API server says of each token, per non-resource path.
ALLOWED = {
    "/metrics": {"Bearer scraper": 200, "Bearer auditor": 200},
    "/debug/rbac": {"Bearer auditor": 200},
}


def verdict(path: str) -> endpoint.Authorize:
    def decide(header: str | None) -> int:
        if not header:
            return 401
        return ALLOWED[path].get(header, 403)

    return decide


def status(app: listener.App, path: str, token: str | None) -> int:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    request = http1.Request(method="GET", target=path, version="HTTP/1.1", headers=headers)
    refused = app.authorize(request) if app.authorize is not None else None
    return refused.status if refused is not None else app.handle(request).status


@pytest.mark.parametrize(
    ("peer", "token", "require_rbac", "expected"),
    [
        pytest.param("127.0.0.1", None, False, 200, id="loopback-no-token"),
        pytest.param("::1", None, False, 200, id="loopback-v6-no-token"),
        pytest.param("::ffff:127.0.0.1", None, False, 200, id="loopback-v4-mapped-no-token"),
        pytest.param("127.0.0.1", None, True, 401, id="loopback-secure-no-token"),
        pytest.param("127.0.0.1", "scraper", True, 200, id="loopback-secure-metrics-token"),
        pytest.param("192.0.2.7", None, False, 401, id="remote-no-token"),
        pytest.param("192.0.2.7", "scraper", False, 403, id="remote-metrics-token"),
        pytest.param("192.0.2.7", "scraper", True, 403, id="remote-secure-metrics-token"),
        pytest.param("192.0.2.7", "auditor", False, 200, id="remote-debug-token"),
        pytest.param("::ffff:192.0.2.7", None, False, 401, id="remote-v4-mapped-no-token"),
        pytest.param("", None, False, 401, id="unknown-peer-no-token"),
    ],
)
def test_debug_rbac_needs_its_own_review_off_loopback(
    peer: str, token: str | None, require_rbac: bool, expected: int
) -> None:
    app = endpoint.exposition_handler(
        runtime.Metrics(),
        authorize=verdict("/metrics") if require_rbac else None,
        rbac=record.Record().snapshot,
        rbac_authorize=verdict("/debug/rbac"),
        peer=lambda: peer,
    )
    seen = status(app, "/debug/rbac", token)
    assert seen == expected, (
        f"GET /debug/rbac from {peer or 'an unknown peer'} with {token or 'no token'} "
        f"(metrics require RBAC: {require_rbac}): expected {expected}, saw {seen}"
    )


@pytest.mark.parametrize(
    "peer",
    [pytest.param("127.0.0.1", id="loopback"), pytest.param("192.0.2.7", id="remote")],
)
def test_metrics_stay_as_they_were_from_anywhere(peer: str) -> None:
    app = endpoint.exposition_handler(
        runtime.Metrics(),
        rbac=record.Record().snapshot,
        rbac_authorize=verdict("/debug/rbac"),
        peer=lambda: peer,
    )
    seen = status(app, "/metrics", None)
    assert seen == 200, f"expected /metrics open without --metrics-require-rbac, saw {seen}"
