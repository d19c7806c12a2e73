"""A run's trigger shows in the Running condition's message, in its artifacts and in
the run observer (the runs metric)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.ansible import spec as ansible_spec
from runner.queue import trigger
from tests.reconcile.fakes import FakeClient, FakeRunner, make_reconciler, probe_object, request

WHY = trigger.Trigger(trigger.Kind.GENERATION, "generation 3")


def test_running_message_artifact_and_metric_name_the_trigger(tmp_path: Path) -> None:
    client = FakeClient(probe_object())
    runner = FakeRunner(tmp_path)

    def make_artifacts(spec: ansible_spec.RunSpec) -> None:
        (spec.private_data_dir / "artifacts" / spec.ident).mkdir(parents=True)

    runner.behave = make_artifacts
    observed: list[dict[str, Any]] = []
    reconciler = make_reconciler(
        tmp_path=tmp_path,
        client=client,
        runner=runner,
        on_run=lambda gvk, **kw: observed.append(kw),  # the metric hook
    )

    reconciler.reconcile(request(), why=WHY)

    running = [
        c
        for patch in client.patches
        for c in (patch.get("status") or {}).get("conditions") or []
        if c["type"] == "Running" and c["status"] == "True" and c["reason"] == "Running"
    ]
    assert running, f"expected a Running=True write, saw patches {client.patches}"
    message = running[0]["message"]
    assert message == "Running reconciliation (spec changed: generation 3)", message

    spec = runner.specs[0]
    record = json.loads(
        (spec.private_data_dir / "artifacts" / spec.ident / "trigger.json").read_text()
    )
    assert record["trigger"] == {"kind": "generation", "detail": "generation 3", "folded": 0}, (
        record
    )
    assert (record["result"], record["failed_task"]) == ("succeeded", None), record
    assert observed and observed[0]["trigger"] == "generation", f"run observer saw {observed}"
