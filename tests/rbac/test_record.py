"""The RBAC record: bounded per watch, denials named with their run's task."""

from __future__ import annotations

import pytest

from runner.ansible import events
from runner.kube.types import GVK
from runner.rbac import record, rules
from runner.reconcile import run

PROBE = GVK("tests.playbook-operator.dev", "v1", "Probe")
PATCH = rules.Use(group="apps", resource="deployments", verb="patch", namespace="ns1")


def test_record_is_bounded_per_watch_and_counts_what_it_dropped() -> None:
    seen = record.Record(cap=3)
    for index in range(5):
        seen.used(PROBE, rules.Use(group="", resource=f"kind{index}", verb="get"))
    seen.used(PROBE, rules.Use(group="", resource="kind0", verb="get"))  # known: not dropped
    (watch,) = seen.snapshot()["watches"]
    assert len(watch["uses"]) == 3, f"expected 3 uses kept, saw {watch['uses']}"
    assert watch["dropped"] == 2, f"expected 2 dropped, saw {watch['dropped']}"


def test_denial_carries_the_task_its_run_was_in_and_counts() -> None:
    counted: list[rules.Use] = []
    seen = record.Record(on_denied=counted.append)
    run = (PROBE, "ns1", "p1")
    seen.run_started(run)
    seen.task_started(run, "Scale the Deployment")
    seen.denied(PROBE, PATCH, run=run)
    seen.denied(PROBE, PATCH, run=run)
    denials = seen.run_ended(run)
    assert denials == [record.Denial(use=PATCH, task="Scale the Deployment")], denials
    assert counted == [PATCH, PATCH], f"expected each 403 counted, saw {counted}"
    (watch,) = seen.snapshot()["watches"]
    assert watch["denied"] == [{**PATCH.to_json(), "task": "Scale the Deployment", "count": 2}]
    assert seen.run_ended(run) == [], "a finished run keeps no denials"


@pytest.mark.parametrize(
    ("failed", "expected"),
    [
        pytest.param(
            [("Scale the Deployment", "Forbidden")],
            ["Forbidden; needs: apps deployments patch in namespace ns1"],
            id="denial-of-the-failed-task",
        ),
        pytest.param(
            [("Other", "boom"), ("Last", "bang")],
            ["boom", "bang; needs: apps deployments patch in namespace ns1"],
            id="denial-of-no-failed-task-goes-last",
        ),
    ],
)
def test_failure_message_names_the_missing_rule(
    failed: list[tuple[str, str]], expected: list[str]
) -> None:
    tasks = tuple(events.FailedTask(task=t, role=None, message=m) for t, m in failed)
    denial = record.Denial(use=PATCH, task="Scale the Deployment")
    seen = [t.message for t in run.rbac_failures(tasks, [denial])]
    assert seen == expected, f"expected {expected}, saw {seen}"


@pytest.mark.parametrize(
    ("verb", "kept"),
    [
        pytest.param("get", True, id="get-kept"),
        pytest.param("list", True, id="list-kept"),
        pytest.param("watch", True, id="watch-kept"),
        pytest.param("create", False, id="create-dropped"),
        pytest.param("patch", False, id="patch-dropped"),
        pytest.param("delete", False, id="delete-dropped"),
    ],
)
def test_a_reads_only_view_notes_reads_in_the_same_record_and_every_denial(
    verb: str, kept: bool
) -> None:
    seen = record.Record()
    view = seen.reads_only()
    run = (PROBE, "ns1", "p1@request-uid")  # an admission run, as the webhooks start it
    seen.run_started(run)
    use = rules.Use(group="", resource="configmaps", verb=verb, namespace="ns1")
    view.used(PROBE, use)  # a request the API server let through
    view.used(PROBE, use)  # and one it denied
    view.denied(PROBE, use, run=run)
    (watch,) = seen.snapshot()["watches"]
    uses = [(u["resource"], u["verb"]) for u in watch["uses"]]
    expected = [("configmaps", verb)] if kept else []
    assert uses == expected, f"expected uses {expected} in the shared record, saw {uses}"
    denied = [(d["resource"], d["verb"]) for d in watch["denied"]]
    assert denied == [("configmaps", verb)], f"expected the 403 kept, saw {denied}"
