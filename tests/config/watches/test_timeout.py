"""reconcileTimeout: how long one run of the watch's role may take before it is killed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.base import errors
from runner.config import watches

HEAD = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n"


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        pytest.param("", None, id="absent-uses-the-flag"),
        pytest.param("  reconcileTimeout: 30m\n", 1800.0, id="duration"),
        pytest.param("  reconcileTimeout: 1h30m\n", 5400.0, id="compound"),
        pytest.param("  reconcileTimeout: 0\n", None, id="zero-uses-the-flag"),
    ],
)
def test_reconcile_timeout_is_read(
    line: str, seconds: float | None, write_watches: Callable[[str], Path], project: Path
) -> None:
    watch = watches.load(write_watches(HEAD + line), environ={}, base_dir=project)[0]
    assert watch.reconcile_timeout == seconds, (
        f"expected reconcile_timeout {seconds}, saw {watch.reconcile_timeout}"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("often", "invalid duration", id="not-a-duration"),
        pytest.param("30", "write '30s' for seconds", id="bare-integer"),
        pytest.param("-5s", "must not be negative", id="negative"),
        pytest.param("1d", "unknown unit 'd'", id="days"),
    ],
)
def test_an_invalid_reconcile_timeout_stops_the_runner(
    value: str, problem: str, write_watches: Callable[[str], Path], project: Path
) -> None:
    path = write_watches(HEAD + f"  reconcileTimeout: {value}\n")
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=project)
    error = caught.value
    assert (error.entry, error.field) == (1, "reconcileTimeout"), str(error)
    assert problem in error.problem, f"expected {problem!r} in {error.problem!r}"
