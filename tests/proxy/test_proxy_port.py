"""The proxy's port: any free one by default, ``--proxy-port`` when given, and a clear
error when that one is taken."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import devcluster
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from tests.runner.support import probe, probe_watches, wait_condition

# Loads, but nothing answers: the proxy's port is taken before the runner talks to a cluster.
UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_taken_proxy_port_stops_the_runner_naming_flag_and_port(
    tmp_path: Path, taken_port: int
) -> None:
    (tmp_path / "roles" / "k" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "k" / "tasks" / "main.yml").write_text("[]\n")
    (tmp_path / "watches.yaml").write_text("- {version: v1, group: g.io, kind: K, role: roles/k}\n")
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    answer = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "run",
            f"--kubeconfig={tmp_path / 'kubeconfig'}",
            f"--proxy-port={taken_port}",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--custom-metrics-bind-address=0",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert answer.returncode == 2, f"expected exit 2, saw {answer.returncode}: {answer.stderr}"
    # The run's first log lines say which versions run roles (and warn on an end-of-life
    # line); besides them, one line names the cause.
    lines = [
        line
        for line in answer.stderr.strip().splitlines()
        if '"msg": "Version"' not in line and "reached its end of life" not in line
    ]
    expected = f"--proxy-port={taken_port}: port {taken_port} is already in use"
    assert len(lines) == 1 and expected in lines[0], (
        f"expected one line with {expected!r}, saw:\n{answer.stderr}"
    )


def test_the_proxy_listens_on_a_free_port_by_default(
    cluster: devcluster.Cluster, probe_crd: GVK, kube: Client, namespace: str, tmp_path: Path
) -> None:
    operator = OperatorProcess(
        workdir=tmp_path,
        kubeconfig=cluster.kubeconfig,
        namespace=namespace,
        watches=probe_watches(),
    )
    operator.command.remove("--proxy-port=0")  # the harness's choice; here the default's
    try:
        operator.start()
        started = next(line for line in operator.lines if line.get("msg") == "started")
        port = started.get("proxy_port")
        assert isinstance(port, int) and port not in (0, 8888), (
            f"expected a kernel-chosen proxy port, saw {port!r}"
        )
        kube.create(probe_crd, probe("free", namespace, {}), namespace=namespace)
        wait_condition(
            kube,
            namespace=namespace,
            name="free",
            kind="Successful",
            status="True",
            operator=operator,
        )
    finally:
        operator.stop()
