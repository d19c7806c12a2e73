"""Fixtures for the ansible-operator compatibility tests: operator processes whose
standard output is kept, and a cluster-scoped kind.

The runner prints raw Ansible output blocks (the PLAY RECAP, ``ANSIBLE_DEBUG_LOGS``)
on standard output, as ansible-operator does; :func:`operators` joins it to the
log stream the harness reads, so a test sees both in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.kube import client, errors
from runner.kube.types import GVK
from testkit.harness import FIXTURES as RUNNER_FIXTURES
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for

FIXTURES = Path(__file__).parent / "fixtures"
KNOB = GVK("compat.playbook-operator.dev", "v1", "Knob")
CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")

Start = Callable[..., OperatorProcess]


@pytest.fixture
def operators(cluster: Any, namespace: str, probe_crd: GVK, tmp_path: Path) -> Iterator[Start]:
    """Start ``playbook-operator run`` processes confined to the test's namespace.

    ``runner_dir``: that ``--runner-dir`` (default: one under the test's tmp_path);
    ``default_runner_dir``: no ``--runner-dir`` at all. Roles are looked up in
    ``fixtures/roles``, then in the runner tests' roles.
    """
    started: list[OperatorProcess] = []

    def start(
        watches: str,
        *,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        runner_dir: Path | None = None,
        default_runner_dir: bool = False,
        leading: bool = True,
    ) -> OperatorProcess:
        workdir = tmp_path / f"operator-{len(started)}"
        workdir.mkdir()
        proc = OperatorProcess(
            workdir=workdir,
            kubeconfig=Path(cluster.kubeconfig),
            namespace=namespace,
            watches=watches,
            args=args,
            env={
                "ANSIBLE_ROLES_PATH": f"{FIXTURES / 'roles'}:{RUNNER_FIXTURES / 'roles'}",
                **(env or {}),
            },
        )
        command = [c for c in proc.command if not c.startswith("--runner-dir=")]
        if not default_runner_dir:
            command.append(f"--runner-dir={runner_dir or workdir / 'runner'}")
        # Standard output joins the log stream (stderr), which the harness reads.
        proc.command = ["/bin/sh", "-c", 'exec "$@" 1>&2', "sh", *command]
        started.append(proc)
        return proc.start(leading=leading)

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="session")
def knob_crd(kube: client.Client) -> GVK:
    """Knob: a cluster-scoped kind, kept for the session."""
    crd = yaml.safe_load((FIXTURES / "crds" / "knobs.yaml").read_text())
    with contextlib.suppress(errors.ConflictError):
        kube.create(CRD, crd)

    def established() -> bool:
        conditions = (kube.get(CRD, name=crd["metadata"]["name"]).get("status") or {}).get(
            "conditions"
        ) or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, describe="the Knob CRD established")
    kube.forget_discovery()
    wait_for(lambda: kube.resource(KNOB), describe="Knob served", ignore=(errors.KubeError,))
    return KNOB


def raw_lines(proc: OperatorProcess) -> list[str]:
    """Every line the process wrote so far, log lines and printed blocks alike."""
    return list(proc.raw)


def logged_lines(proc: OperatorProcess, msg: str) -> list[dict[str, Any]]:
    return [line for line in list(proc.lines) if line.get("msg") == msg]
