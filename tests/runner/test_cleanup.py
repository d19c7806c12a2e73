"""On the embedded cluster: deleting a CR removes its private data dir from the runner dir."""

from __future__ import annotations

import pytest

from runner.kube.client import Client
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration


def test_deleting_a_cr_removes_its_private_data_dir(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches())
    kube.create(PROBE, probe("tidy", namespace, {"message": "x"}), namespace=namespace)
    wait_condition(kube, namespace=namespace, name="tidy", kind="Successful", status="True")
    private = operator.workdir / "runner" / PROBE.group / PROBE.version / "Probe" / namespace
    private = private / "tidy"
    assert (private / "artifacts").is_dir(), f"expected the run's artifacts under {private}"

    kube.delete(PROBE, name="tidy", namespace=namespace)
    operator.eventually(
        lambda: not private.exists(), describe=f"{private} removed after the CR was deleted"
    )
