"""The read-only proxy of ``preview``: which requests it forwards."""

from __future__ import annotations

import pytest

from runner.proxy import handler


@pytest.mark.parametrize(
    ("method", "query", "allowed"),
    [
        pytest.param("GET", {}, True, id="read"),
        pytest.param("HEAD", {}, True, id="head"),
        pytest.param("POST", {}, False, id="create"),
        pytest.param("POST", {"dryRun": ["All"]}, True, id="dry-run-create"),
        pytest.param("DELETE", {"dryRun": ["All"]}, True, id="dry-run-delete"),
        pytest.param("DELETE", {}, False, id="delete"),
        pytest.param("PATCH", {"dryRun": ["None"]}, False, id="patch-other-dry-run"),
        pytest.param("PUT", {"dryRun": ["All", "x"]}, False, id="put-two-dry-runs"),
    ],
)
def test_read_only_proxy_forwards(method: str, query: dict[str, list[str]], allowed: bool) -> None:
    forwarded = handler._allowed_read_only(method, query)
    assert forwarded is allowed, f"{method} {query}: expected forwarded={allowed}, saw {forwarded}"
