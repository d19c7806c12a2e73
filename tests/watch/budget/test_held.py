"""What each informer holds, logged once it synced and exported as metrics (a whole runner)."""

from __future__ import annotations

import pytest

from runner.kube.client import Client
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration


def test_the_metrics_and_logs_show_what_each_informer_holds(
    start_operator: StartOperator, kube: Client, namespace: str
) -> None:
    # Created first: the start-up line of the Probe informer counts it.
    kube.create(PROBE, probe("p", namespace, {"message": "hi"}), namespace=namespace)
    operator = start_operator(probe_watches())
    wait_condition(
        kube, namespace=namespace, name="p", kind="Successful", status="True", operator=operator
    )

    def held(kind: str) -> tuple[float, float]:
        labels = {"group": "", "version": "v1", "kind": kind}
        if kind == "Probe":
            labels = {"group": PROBE.group, "version": PROBE.version, "kind": kind}
        return (
            operator.metric("playbook_operator_informer_objects", **labels),
            operator.metric("playbook_operator_informer_bytes", **labels),
        )

    # The namespace's other ConfigMaps (kube-root-ca.crt) are nobody's children: not held.
    operator.eventually(
        lambda: held("ConfigMap"),
        describe="the ConfigMap informer to report 1 object (the probe's echo) and its bytes",
        until=lambda seen: seen[0] == 1 and seen[1] > 100,
    )
    probes, probe_bytes = held("Probe")
    assert probes == 1 and probe_bytes > 100, (
        f"expected 1 Probe held, saw {probes} ({probe_bytes} B)"
    )
    synced = [line for line in operator.lines if line.get("msg") == "informer synced"]
    kinds = {line.get("kind"): line for line in synced}
    assert {"Probe", "ConfigMap"} <= set(kinds), (
        f"expected a synced line per informer, saw {synced}"
    )
    assert kinds["Probe"].get("objects") == 1 and kinds["Probe"].get("bytes", 0) > 100, (
        f"expected the Probe informer's line to count 1 object and its bytes, saw {kinds['Probe']}"
    )
