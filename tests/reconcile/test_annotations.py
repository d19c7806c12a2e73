"""A CR's annotations steer its own runs only within bounds the operator sets.

verbosity, reconcile-period and max-runner-artifacts are written by whoever may
edit the CR; each is clamped to a range, refused (default used) when it is not
ASCII digits or a duration, and said once per value in a Warning Event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.config import cr_annotations
from tests.reconcile.fakes import (
    FakeClient,
    FakeRecorder,
    FakeRunner,
    make_reconciler,
    probe_object,
    request,
)

VERBOSITY = cr_annotations.VERBOSITY_ANNOTATION
ARTIFACTS = cr_annotations.MAX_ARTIFACTS_ANNOTATION
PERIOD = cr_annotations.RECONCILE_PERIOD_ANNOTATION


def reconcile_once(
    tmp_path: Path, annotations: dict[str, str], **overrides: Any
) -> tuple[Any, FakeRunner, FakeRecorder]:
    client = FakeClient(probe_object(annotations=annotations))
    runner, events = FakeRunner(tmp_path), FakeRecorder()
    reconciler = make_reconciler(
        tmp_path=tmp_path, client=client, runner=runner, events=events, **overrides
    )
    result = reconciler.reconcile(request())
    return result, runner, events


@pytest.mark.parametrize(
    ("annotation", "value", "expected", "warned"),
    [
        pytest.param(VERBOSITY, "3", 3, False, id="verbosity-in-range"),
        pytest.param(VERBOSITY, "7", 4, True, id="verbosity-clamped"),
        pytest.param(VERBOSITY, "²", 2, True, id="verbosity-unicode-digit"),
        pytest.param(VERBOSITY, "-1", 2, True, id="verbosity-negative"),
        pytest.param(VERBOSITY, "٣", 2, True, id="verbosity-arabic-digit"),
        pytest.param(ARTIFACTS, "5", 5, False, id="artifacts-in-range"),
        pytest.param(ARTIFACTS, "0", 20, True, id="artifacts-zero-is-the-watch-default"),
        pytest.param(ARTIFACTS, "500", 20, True, id="artifacts-clamped"),
        pytest.param(ARTIFACTS, "²", 20, True, id="artifacts-unicode-digit"),
        pytest.param(ARTIFACTS, "9" * 5000, 20, True, id="artifacts-past-ints-digit-limit"),
        pytest.param(VERBOSITY, "0" * 5000 + "1", 4, True, id="verbosity-past-ints-digit-limit"),
    ],
)
def test_run_annotations_are_bounded(
    annotation: str, value: str, expected: int, warned: bool, tmp_path: Path
) -> None:
    _, runner, events = reconcile_once(tmp_path, {annotation: value})
    assert len(runner.specs) == 1, f"expected one run, saw {len(runner.specs)}"
    spec = runner.specs[0]
    seen = spec.verbosity if annotation == VERBOSITY else spec.rotate_artifacts
    assert seen == expected, f"{annotation}={value!r}: expected {expected}, ran with {seen}"
    warnings = events.warnings()
    if warned:
        assert len(warnings) == 1 and annotation in warnings[0], f"warnings: {warnings}"
    else:
        assert warnings == [], f"expected no warning for {value!r}, saw {warnings}"


@pytest.mark.parametrize(
    ("value", "requeue_after", "warned"),
    [
        pytest.param("30s", 30.0, False, id="in-range"),
        pytest.param("1ns", 1.0, True, id="hot-loop-clamped"),
        pytest.param("500ms", 1.0, True, id="sub-second-clamped"),
        pytest.param("0s", 0.0, False, id="zero-means-no-resync"),
    ],
)
def test_reconcile_period_has_a_floor(
    value: str, requeue_after: float, warned: bool, tmp_path: Path
) -> None:
    result, _, events = reconcile_once(tmp_path, {PERIOD: value})
    assert result.requeue_after == requeue_after, (
        f"{PERIOD}={value!r}: expected a requeue after {requeue_after}s, saw {result.requeue_after}"
    )
    assert bool(events.warnings()) == warned, f"warnings: {events.warnings()}"


def test_the_operators_own_verbosity_raises_the_ceiling(tmp_path: Path) -> None:
    _, runner, events = reconcile_once(tmp_path, {VERBOSITY: "6"}, ansible_verbosity=6)
    assert runner.specs[0].verbosity == 6, f"ran with verbosity {runner.specs[0].verbosity}"
    assert events.warnings() == [], events.warnings()


def test_a_warning_is_recorded_once_per_value(tmp_path: Path) -> None:
    client = FakeClient(probe_object(annotations={VERBOSITY: "7"}))
    runner, events = FakeRunner(tmp_path), FakeRecorder()
    reconciler = make_reconciler(tmp_path=tmp_path, client=client, runner=runner, events=events)
    for _ in range(3):
        reconciler.reconcile(request())
    assert len(events.warnings()) == 1, f"3 runs, one value: {events.warnings()}"
    assert client.obj is not None
    client.obj["metadata"]["annotations"][VERBOSITY] = "9"
    reconciler.reconcile(request())
    reconciler.reconcile(request())
    assert len(events.warnings()) == 2, f"a new value warns once more: {events.warnings()}"
