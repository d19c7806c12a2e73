"""Sharded runner processes on the embedded cluster, and the run records of the
shard_probe role: which replica ran which ShardProbe, from when to when."""

from __future__ import annotations

import itertools
import os
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for

FIXTURES = Path(__file__).parent / "fixtures"
SHARD_PROBE = GVK("sharding.tests.playbook-operator.dev", "v1", "ShardProbe")
WATCHES = f"- version: v1\n  group: {SHARD_PROBE.group}\n  kind: ShardProbe\n  role: shard_probe\n"
# Short Leases keep the test quick; the renew deadline leaves room for a loaded machine.
LEASE_SECONDS = 6
TIMING = ("--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s")


class Replica(OperatorProcess):
    """One sharded runner process."""

    def __init__(
        self, *, workdir: Path, kubeconfig: Path, namespace: str, group: str, name: str, log: Path
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "manager.yaml"
        config.write_text("leaderElection:\n  retryPeriod: 0.5s\n")
        super().__init__(
            workdir=workdir,
            kubeconfig=kubeconfig,
            namespace=namespace,
            watches=WATCHES,
            args=(
                "--sharded",
                f"--replica-id={name}",
                f"--shard-group={group}",
                f"--leader-election-namespace={namespace}",
                f"--config={config}",
                *TIMING,
            ),
            env={
                "ANSIBLE_ROLES_PATH": str(FIXTURES / "roles"),
                "SHARD_PROBE_REPLICA": name,
                "SHARD_PROBE_LOG": str(log),
            },
        )
        self.name = name

    def kill(self) -> None:
        """``kill -9``: no shutdown, no release of the Lease."""
        assert self._proc is not None
        os.kill(self._proc.pid, signal.SIGKILL)
        self._proc.wait()


@dataclass(frozen=True)
class Run:
    replica: str
    key: str
    wave: int
    start: float
    end: float


def runs(log: Path) -> list[Run]:
    if not log.exists():
        return []
    found: list[Run] = []
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5:
            found.append(Run(parts[0], parts[1], int(parts[2]), float(parts[3]), float(parts[4])))
    return found


def overlaps(records: list[Run]) -> list[tuple[Run, Run]]:
    """Pairs of runs of one object whose [start, end] intersect."""
    by_key: dict[str, list[Run]] = {}
    for run in records:
        by_key.setdefault(run.key, []).append(run)
    found: list[tuple[Run, Run]] = []
    for key_runs in by_key.values():
        ordered = sorted(key_runs, key=lambda r: r.start)
        found.extend((a, b) for a, b in itertools.pairwise(ordered) if b.start < a.end)
    return found


def last_runs(records: list[Run]) -> dict[str, Run]:
    latest: dict[str, Run] = {}
    for run in sorted(records, key=lambda r: r.start):
        latest[run.key] = run
    return latest


def shard_probe(name: str, namespace: str, wave: int, *, child: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": SHARD_PROBE.api_version,
        "kind": SHARD_PROBE.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"wave": wave, "child": child},
    }


def set_wave(kube: Client, *, namespace: str, names: list[str], wave: int) -> None:
    for name in names:
        kube.patch(SHARD_PROBE, name=name, namespace=namespace, body={"spec": {"wave": wave}})


def converged(log: Path, *, keys: list[str], wave: int, timeout: float) -> dict[str, Run]:
    """Wait until every object's latest run is of ``wave``; returns the latest runs."""

    def lagging() -> dict[str, int | None]:
        latest = last_runs(runs(log))
        found = {key: latest[key].wave if key in latest else None for key in keys}
        return {key: seen for key, seen in found.items() if seen != wave}

    wait_for(
        lagging,
        until=lambda behind: not behind,
        describe=f"every object's latest run at wave {wave} (shown: objects behind)",
        timeout=timeout,
    )
    return last_runs(runs(log))


def owned(replicas: list[Replica]) -> Counter[str]:
    return Counter(
        {r.name: int(r.metric("playbook_operator_shard_owned_resources")) for r in replicas}
    )
