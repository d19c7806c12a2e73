"""Fixtures for runner integration tests: the Probe CRD and operator processes.

Loaded for the whole suite by ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import FIXTURES, OperatorProcess
from testkit.helpers import wait_for

PROBE = GVK("tests.playbook-operator.dev", "v1", "Probe")
CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")

StartOperator = Callable[..., OperatorProcess]


@pytest.fixture(scope="session")
def probe_crd(cluster: Any) -> GVK:
    cluster.kubectl("apply", "-f", str(FIXTURES / "crd.yaml"))
    cluster.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/probes.tests.playbook-operator.dev",
    )
    return PROBE


@pytest.fixture
def start_operator(
    cluster: Any, namespace: str, probe_crd: GVK, tmp_path: Path
) -> Iterator[StartOperator]:
    started: list[OperatorProcess] = []

    def start(
        watches: str,
        *,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
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
            env=env,
        )
        started.append(proc)
        return proc.start(leading=leading)

    yield start
    for proc in started:
        proc.stop()


def probe_watches(extra: str = "") -> str:
    """watches.yaml for the Probe kind and the probe role; ``extra`` adds indented keys."""
    return f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: probe\n" + (
        extra + "\n" if extra else ""
    )


def probe(
    name: str, namespace: str, spec: dict[str, Any], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": PROBE.api_version,
        "kind": PROBE.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def wait_condition(
    kube: Client,
    *,
    namespace: str,
    name: str,
    kind: str,
    status: str,
    timeout: float = 90,
    operator: OperatorProcess | None = None,
) -> dict[str, Any]:
    """Wait until condition ``kind`` has ``status`` and observedGeneration caught up."""

    def observe() -> dict[str, Any]:
        return kube.get(PROBE, name=name, namespace=namespace)

    def done(obj: dict[str, Any]) -> bool:
        cond = condition(obj, kind)
        caught_up = (obj.get("status") or {}).get("observedGeneration") == obj["metadata"].get(
            "generation"
        )
        return bool(cond and cond.get("status") == status and caught_up)

    describe = f"{kind}={status} with observedGeneration current on {namespace}/{name}"
    if operator is not None:
        return operator.eventually(observe, until=done, describe=describe, timeout=timeout)
    return wait_for(observe, until=done, describe=describe, timeout=timeout)
