"""The Paused condition (reconcile.pause) and the extra status fields a write carries
(``reconciledChildren``, reconcile.startup)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from runner.status import conditions
from tests.status.test_write import GVK_, FakeClient

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def by_type(found: list[conditions.Condition]) -> dict[str, conditions.Condition]:
    return {c["type"]: c for c in found}


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        pytest.param([], None, id="never-paused-stays-absent"),
        pytest.param(
            conditions.mark_paused([], now=NOW), ("False", "Resumed"), id="paused-becomes-false"
        ),
    ],
)
def test_resuming(before: list[conditions.Condition], expected: tuple[str, str] | None) -> None:
    got = by_type(conditions.mark_resumed(before, now=NOW)).get("Paused")
    seen = (got["status"], got["reason"]) if got else None
    assert seen == expected, f"expected Paused {expected}, saw {got}"


def test_pausing_keeps_the_last_runs_conditions() -> None:
    done = conditions.mark_successful(
        [],
        result=conditions.AnsibleResult(ok=1, changed=0, skipped=0, failures=0, completion="x"),
        now=NOW,
    )
    paused = by_type(conditions.mark_paused(done, now=NOW))
    assert paused["Paused"]["status"] == "True" and paused["Paused"]["reason"] == "Paused"
    assert paused["Successful"]["status"] == "True", f"Successful must stay: {paused}"


def test_a_write_carries_extra_status_fields_and_a_null_removes_one() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "m", "namespace": "ns", "resourceVersion": "1"},
        "status": {"reconciledChildren": {"digest": "old"}, "nodes": ["a"]},
    }
    client = FakeClient(obj)
    for record in ({"digest": "new"}, None):  # the runtime applied the record, then drops it
        conditions.write(
            client,
            gvk=GVK_,
            namespace="ns",
            name="m",
            conditions_update=lambda c: c,
            observed_generation=None,
            fields={"reconciledChildren": record},
        )
    status = client.obj["status"] if client.obj else {}
    assert "reconciledChildren" not in status and status.get("nodes") == ["a"], (
        f"expected the record gone and the role's nodes kept, saw {status}"
    )
