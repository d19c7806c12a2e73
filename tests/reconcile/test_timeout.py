"""Each run gets a timeout: the watch's reconcileTimeout, else --reconcile-timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reconcile.fakes import FakeClient, FakeRunner, make_reconciler, probe_object, request


@pytest.mark.parametrize(
    ("watch_extra", "overrides", "timeout"),
    [
        pytest.param("", {}, 3600.0, id="default-one-hour"),
        pytest.param("", {"reconcile_timeout": 90.0}, 90.0, id="flag"),
        pytest.param("  reconcileTimeout: 5m\n", {"reconcile_timeout": 90.0}, 300.0, id="watch"),
        pytest.param("", {"reconcile_timeout": 0.0}, None, id="flag-zero-disables"),
    ],
)
def test_run_timeout_comes_from_the_watch_or_the_flag(
    watch_extra: str, overrides: dict[str, Any], timeout: float | None, tmp_path: Path
) -> None:
    runner = FakeRunner(tmp_path)
    reconciler = make_reconciler(
        tmp_path=tmp_path,
        client=FakeClient(probe_object()),
        runner=runner,
        watch_extra=watch_extra,
        **overrides,
    )
    reconciler.reconcile(request())
    assert runner.specs[0].timeout == timeout, (
        f"expected RunSpec.timeout {timeout}, saw {runner.specs[0].timeout}"
    )
