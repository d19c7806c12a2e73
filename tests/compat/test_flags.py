"""The real command line with ansible-operator's flags, on the embedded cluster.

Deployments and test setups written for ``ansible-operator run`` pass zap's logging
flags (upstream's own e2e setup passes ``--zap-log-level=2``), the
``--leader-elect-*`` names and a ``--config`` manager file; the runner starts with
them and they mean what they mean upstream.
"""

from __future__ import annotations

import re
from pathlib import Path

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import unique_name
from tests.compat.conftest import Start
from tests.runner.support import PROBE, probe, probe_watches, wait_condition

LEASE = GVK("coordination.k8s.io", "v1", "Lease")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_the_runner_starts_and_reconciles_with_ansible_operators_flags(
    kube: Client, namespace: str, operators: Start, tmp_path: Path
) -> None:
    lease = unique_name("flags-lease")
    config = tmp_path / "controller_manager_config.yaml"
    config.write_text(
        "apiVersion: controller-runtime.sigs.k8s.io/v1alpha1\n"
        "kind: ControllerManagerConfig\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        f"  resourceName: {lease}\n"
        f"  resourceNamespace: {namespace}\n"
    )
    operator = operators(
        probe_watches(),
        args=(
            f"--config={config}",
            "--zap-log-level=2",
            "--zap-stacktrace-level=panic",
            "--zap-time-encoding=rfc3339",
            "--zap-encoder=json",
            "--leader-elect-resource-lock=leases",
            "--leader-elect-lease-duration=20s",
            "--leader-elect-renew-deadline=15s",
            "--enable-http2=false",
            "--ansible-log-events=tasks",
        ),
    )
    kube.create(PROBE, probe("f", namespace, {}), namespace=namespace)
    wait_condition(
        kube, namespace=namespace, name="f", kind="Successful", status="True", operator=operator
    )

    held = kube.get(LEASE, name=lease, namespace=namespace)["spec"]
    assert held.get("leaseDurationSeconds") == 20, f"the --config Lease: {held}"
    lines = list(operator.lines)
    stamps = {str(line.get("ts")) for line in lines}
    assert all(RFC3339.match(stamp) for stamp in stamps), (
        f"expected RFC 3339 times, saw {sorted(stamps)[:5]}"
    )
    # Level 2 is one step more verbose than debug: the HTTP client's connection lines.
    loggers = {line.get("logger") for line in lines}
    assert "urllib3.connectionpool" in loggers, (
        f"loggers seen at level 2: {sorted(map(str, loggers))}"
    )
