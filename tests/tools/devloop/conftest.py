"""A project directory with a tiny role, and ``playbook-operator run --dev`` in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for
from tests.runner.support import PROBE

CONFIGMAP = GVK("", "v1", "ConfigMap")

#: The role's one task; ``{version}`` marks the edits the tests make.
TASKS = """\
---
- name: Write the live ConfigMap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{{{ ansible_operator_meta.name }}}}-live"
        namespace: "{{{{ ansible_operator_meta.namespace }}}}"
      data:
        message: "{version}-{{{{ word | default('') }}}}-{{{{ greeting | default('') }}}}"
"""


def watches_yaml(extra: str = "", role: str = "live") -> str:
    return f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: {role}\n" + extra


def write_role(project: Path, version: str, *, role: str = "live") -> Path:
    tasks = project / "roles" / role / "tasks" / "main.yml"
    tasks.parent.mkdir(parents=True, exist_ok=True)
    tasks.write_text(TASKS.format(version=version))
    return tasks


def message(kube: Client, namespace: str, name: str) -> str | None:
    try:
        found = kube.get(CONFIGMAP, name=f"{name}-live", namespace=namespace)
    except Exception:
        return None
    return str((found.get("data") or {}).get("message"))


StartDev = Callable[..., OperatorProcess]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    write_role(path, "one")
    return path


@pytest.fixture
def start_dev(cluster: Any, namespace: str, probe_crd: GVK, project: Path) -> Iterator[StartDev]:
    started: list[OperatorProcess] = []

    def start(watches: str = watches_yaml(), *, args: tuple[str, ...] = ()) -> OperatorProcess:
        proc = OperatorProcess(
            workdir=project,
            kubeconfig=Path(cluster.kubeconfig),
            namespace=namespace,
            watches=watches,
            args=("--dev", *args),
        )
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()


def wait_message(
    operator: OperatorProcess, kube: Client, namespace: str, name: str, expected: str
) -> None:
    operator.eventually(
        lambda: message(kube, namespace, name),
        until=lambda seen: seen == expected,
        describe=f"ConfigMap {name}-live to say {expected!r}",
        timeout=90,
    )


__all__ = ["message", "wait_for", "wait_message", "watches_yaml", "write_role"]
