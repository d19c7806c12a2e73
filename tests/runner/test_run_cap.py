"""--max-concurrent-runs caps Ansible runs across kinds, on the embedded cluster: two kinds,
each with workers of its own and a slow role, never run at once under a cap of 1."""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

CAPPED = GVK(PROBE.group, "v1", "CapProbe")
CRD = f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: capprobes.{PROBE.group}
spec:
  group: {PROBE.group}
  names: {{kind: CapProbe, listKind: CapProbeList, plural: capprobes, singular: capprobe}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


@pytest.fixture
def capped_crd(cluster: Any, tmp_path: Path) -> GVK:
    path = tmp_path / "capprobe-crd.yaml"
    path.write_text(CRD)
    cluster.kubectl("apply", "-f", str(path))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/capprobes.{PROBE.group}"
    )
    return CAPPED


def intervals(runner_dir: Path) -> list[tuple[float, float, str]]:
    """(first event, last event, run dir) of every run, from the job_events artifacts."""
    found = []
    for events in runner_dir.rglob("job_events"):
        stamps = []
        for path in events.glob("*.json"):
            created = json.loads(path.read_text()).get("created")
            if created:
                stamps.append(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
        if stamps:
            found.append((min(stamps), max(stamps), str(events.parent)))
    return sorted(found)


def test_two_kinds_never_run_at_once_under_a_cap_of_one(
    kube: Client, namespace: str, start_operator: StartOperator, capped_crd: GVK
) -> None:
    watches = probe_watches() + (
        f"- version: v1\n  group: {CAPPED.group}\n  kind: CapProbe\n  role: probe\n"
    )
    operator = start_operator(watches, args=("--max-concurrent-runs=1",))
    spec = {"slow_seconds": 2}
    kube.create(PROBE, probe("a", namespace, spec), namespace=namespace)
    other = probe("b", namespace, spec)
    other["kind"] = CAPPED.kind
    kube.create(CAPPED, other, namespace=namespace)
    wait_condition(
        kube, namespace=namespace, name="a", kind="Successful", status="True", operator=operator
    )

    def b_done() -> bool:
        obj = kube.get(CAPPED, name="b", namespace=namespace)
        return any(
            c.get("type") == "Successful" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        )

    operator.eventually(b_done, describe="the CapProbe to succeed")
    runs = intervals(operator.workdir / "runner")
    assert len(runs) >= 2, f"expected a run of each kind in the artifacts, saw {runs}"
    for (_, end, first), (start, _, second) in itertools.pairwise(runs):
        assert start >= end - 0.05, (
            f"expected runs one at a time, but {second} started {end - start:.2f}s "
            f"before {first} ended"
        )


def test_a_cr_waiting_for_a_slot_shows_waiting_not_running(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches(), args=("--max-concurrent-runs=1",))
    kube.create(PROBE, probe("slow", namespace, {"slow_seconds": 8}), namespace=namespace)

    def conditions_of(name: str) -> dict[str, dict[str, Any]]:
        obj = kube.get(PROBE, name=name, namespace=namespace)
        return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}

    # Running with reason Running: the run is under way (after it, the reason is Successful).
    operator.eventually(
        lambda: conditions_of("slow"),
        until=lambda c: c.get("Running", {}).get("reason") == "Running",
        describe="the slow CR's run under way",
    )
    kube.create(PROBE, probe("queued", namespace, {}), namespace=namespace)

    seen = operator.eventually(
        lambda: conditions_of("queued"),
        until=lambda c: c.get("Reconciling", {}).get("reason") == "WaitingForSlot",
        describe="the queued CR marked Reconciling=True, WaitingForSlot",
    )
    assert seen["Reconciling"]["status"] == "True", seen
    assert seen.get("Running", {}).get("status") != "True", (
        f"expected no Running=True while the CR waits for its slot, saw {seen}"
    )
    wait_condition(
        kube,
        namespace=namespace,
        name="queued",
        kind="Successful",
        status="True",
        operator=operator,
    )
    after = conditions_of("queued")
    # kstatus' Reconciling (on by default) ends False with the run; without it, it goes.
    reconciling = after.get("Reconciling", {})
    assert (reconciling.get("status"), reconciling.get("reason")) == ("False", "Succeeded"), (
        f"expected the wait over: Reconciling False, Succeeded, saw {after}"
    )
