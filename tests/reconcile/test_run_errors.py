"""A run step that cannot start (or crashes) ends in Failure with the reason, never Running.

The reconciler writes Running before Ansible starts; whatever the run step raises
(a launch error, a full disk, a bug) must turn that into Failure with the message,
record a Warning Event, and raise so the controller retries with backoff.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from runner.ansible import spec as ansible_spec
from runner.base import errors
from tests.reconcile.fakes import (
    FakeClient,
    FakeRecorder,
    FakeRunner,
    make_reconciler,
    probe_object,
    request,
)


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        pytest.param(
            errors.ReconcileError("cannot prepare the Ansible run: No closing quotation"),
            "No closing quotation",
            id="launch-error",
        ),
        pytest.param(
            OSError(errno.ENOSPC, "No space left on device"),
            "No space left on device",
            id="disk-full",
        ),
        pytest.param(RuntimeError("a bug in the run step"), "a bug in the run step", id="crash"),
    ],
)
def test_a_run_step_error_ends_in_failure(raised: Exception, reason: str, tmp_path: Path) -> None:
    client = FakeClient(probe_object())
    runner, events = FakeRunner(tmp_path), FakeRecorder()

    def fail(spec: ansible_spec.RunSpec) -> None:
        raise raised

    runner.behave = fail
    reconciler = make_reconciler(tmp_path=tmp_path, client=client, runner=runner, events=events)
    with pytest.raises(errors.ReconcileError, match=reason):
        reconciler.reconcile(request())
    conditions = client.conditions()
    running, failure = conditions.get("Running"), conditions.get("Failure")
    assert running is not None and running["status"] == "False", f"Running: {running}"
    assert failure is not None and failure["status"] == "True", f"Failure: {failure}"
    assert reason in failure["message"], f"expected {reason!r} in {failure['message']!r}"
    assert any(reason in message for message in events.warnings()), events.events
