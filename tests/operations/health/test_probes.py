"""Probes: /healthz answers while serving; /readyz only once caches are synced."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from runner.operations import health


@pytest.fixture
def probe_server() -> Iterator[tuple[str, list[bool]]]:
    ready = [False]
    server = health.serve(
        ("127.0.0.1", 0), handler=health.handler_for(ready=lambda: ready[0]), name="health"
    )
    yield f"http://127.0.0.1:{server.server_port}", ready
    server.shutdown()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_readyz_follows_cache_sync(probe_server: tuple[str, list[bool]]) -> None:
    base, ready = probe_server
    assert status(f"{base}/healthz") == 200
    assert status(f"{base}/readyz") == 503, "ready before the caches synced"
    ready[0] = True
    assert status(f"{base}/readyz") == 200


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param(":8080", ("0.0.0.0", 8080), id="all-interfaces"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="loopback-any-port"),
        pytest.param("0", None, id="disabled"),
        pytest.param("", None, id="empty-disabled"),
    ],
)
def test_parse_bind(address: str, expected: tuple[str, int] | None) -> None:
    assert health.parse_bind(address) == expected
