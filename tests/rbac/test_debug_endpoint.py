"""GET /debug/rbac: the record as JSON, behind the same authorization as /metrics."""

from __future__ import annotations

import json

import pytest

from runner.base.http import http1
from runner.kube.types import GVK
from runner.operations.metrics import endpoint, runtime
from runner.prometheus import exposition
from runner.rbac import record, rules

PROBE = GVK("tests.playbook-operator.dev", "v1", "Probe")


def _get(path: str, token: str | None = None) -> http1.Request:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return http1.Request(method="GET", target=path, version="HTTP/1.1", headers=headers)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        pytest.param("reader", 200, id="allowed-to-read-metrics"),
        pytest.param("stranger", 403, id="not-allowed"),
        pytest.param(None, 401, id="no-token"),
    ],
)
def test_debug_rbac_is_authorized_as_metrics(token: str | None, expected: int) -> None:
    seen = record.Record()
    seen.used(PROBE, rules.Use(group="apps", resource="deployments", verb="get", namespace="a"))

    def authorize(header: str | None) -> int:
        return {"Bearer reader": 200, "Bearer stranger": 403}.get(header or "", 401)

    app = endpoint.exposition_handler(runtime.Metrics(), authorize=authorize, rbac=seen.snapshot)
    assert app.authorize is not None
    for path in ("/metrics", "/debug/rbac"):
        refused = app.authorize(_get(path, token))
        status = 200 if refused is None else refused.status
        assert status == expected, f"{path} with {token}: expected {expected}, saw {status}"
    if expected == 200:
        answer = app.handle(_get("/debug/rbac", token))
        body = json.loads(answer.body)
        assert body["watches"][0]["uses"][0]["resource"] == "deployments", body


def test_denials_are_counted_by_the_rule_lacked() -> None:
    registry = runtime.Metrics()
    registry.api_denied.labels(group="apps", resource="deployments", verb="patch").inc()
    text = exposition.exposition(registry.registry).decode()
    line = (
        'playbook_operator_api_requests_denied_total{group="apps",resource="deployments",'
        'verb="patch"} 1'
    )
    assert line in text, f"expected {line!r} in the exposition"
