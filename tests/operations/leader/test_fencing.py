"""Fencing of the leader: never two reconcilers at once, even when the API goes silent.

Runner A leads through a relay (testkit/relay.py); runner B stands by, connected
directly. Every run of the fence_probe role beats its time into one file while it
holds. The relay is frozen while A runs: A's connections stay open and silent, so
its Lease requests hang instead of failing. B takes the Lease once it expires; by
then A must have stopped starting runs and ended those still going (exit code 3),
so no beat of A is later than B's first. Both with warm launchers and with Ansible
started cold, whose processes would outlive the runner unless it kills them.
A leader stopped with SIGTERM keeps the Lease until its runs ended, then releases it.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import relay as relay_mod
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name

FIXTURES = Path(__file__).parent / "fixtures"
FENCE_PROBE = GVK("leader.tests.playbook-operator.dev", "v1", "FenceProbe")
WATCHES = (
    f"- version: v1\n  group: {FENCE_PROBE.group}\n  kind: FenceProbe\n"
    "  role: fence_probe\n  reconcilePeriod: 1s\n"
)
LEASE_SECONDS = 4
RENEW_DEADLINE = 3
# A's runs outlast its Lease by far: one going at the freeze would overlap B's first
# run unless A ends it. B's are short, to keep the test quick.
HOLD_A, HOLD_B = 20, 2
EXIT_LEADERSHIP_LOST = 3


@dataclass(frozen=True)
class Run:
    replica: str
    key: str
    start: float
    last: float  # the run's last beat: it was going until at least then


def runs(log: Path) -> list[Run]:
    """Each run's first and last beat, from the lines of the fence_probe role."""
    if not log.exists():
        return []
    beats: dict[str, tuple[str, str, list[float]]] = {}
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            beats.setdefault(parts[0], (parts[1], parts[2], []))[2].append(float(parts[3]))
    return [Run(who, key, min(times), max(times)) for who, key, times in beats.values()]


def of(replica: str, found: list[Run]) -> list[Run]:
    return [run for run in found if run.replica == replica]


@pytest.fixture(scope="session")
def fence_probe_crd(cluster: Any) -> None:
    cluster.kubectl("apply", "-f", str(FIXTURES / "crd.yaml"))
    cluster.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/fenceprobes.leader.tests.playbook-operator.dev",
    )


@pytest.fixture
def link(cluster: Any, tmp_path: Path) -> Iterator[Link]:
    """A relay to the API server, and kubeconfigs through it and direct."""
    direct = Path(cluster.kubeconfig)
    host, port = relay_mod.api_address(direct)
    with relay_mod.Relay(target_host=host, target_port=port) as relay:
        through = relay_mod.write_kubeconfig(direct, tmp_path / "relay.kubeconfig", port=relay.port)
        yield Link(relay=relay, through_relay=through, direct=direct)


@pytest.fixture
def execution() -> str:
    """$PLAYBOOK_OPERATOR_WARM of both runners: warm launchers, or Ansible started cold."""
    return "true"


class Candidate(OperatorProcess):
    """A runner with --leader-elect and short Lease timings."""

    def terminate(self) -> None:
        """SIGTERM, without waiting: a graceful shutdown begins."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGTERM)


def candidate(
    *,
    name: str,
    hold: float,
    execution: str,
    workdir: Path,
    kubeconfig: Path,
    namespace: str,
    lease: str,
    log: Path,
) -> Candidate:
    workdir.mkdir(parents=True)
    config = workdir / "manager.yaml"
    config.write_text("leaderElection:\n  retryPeriod: 0.5s\n")
    return Candidate(
        workdir=workdir,
        kubeconfig=kubeconfig,
        namespace=namespace,
        watches=WATCHES,
        args=(
            "--leader-elect",
            f"--leader-election-id={lease}",
            f"--leader-election-namespace={namespace}",
            f"--leader-elect-lease-duration={LEASE_SECONDS}s",
            f"--leader-elect-renew-deadline={RENEW_DEADLINE}s",
            f"--config={config}",
        ),
        env={
            "ANSIBLE_ROLES_PATH": str(FIXTURES / "roles"),
            "FENCE_PROBE_REPLICA": name,
            "FENCE_PROBE_LOG": str(log),
            "FENCE_PROBE_HOLD": str(hold),
            "PLAYBOOK_OPERATOR_WARM": execution,
        },
    )


@dataclass(frozen=True)
class Link:
    relay: relay_mod.Relay
    through_relay: Path  # a kubeconfig
    direct: Path  # the cluster's own kubeconfig


@dataclass(frozen=True)
class Pair:
    """Runner A, the leader, through the relay; runner B, the standby, direct."""

    a: Candidate
    b: Candidate
    log: Path


@pytest.fixture
def pair(
    kube: Client, namespace: str, link: Link, tmp_path: Path, execution: str
) -> Iterator[Pair]:
    """A leading and running two FenceProbes, B standing by."""
    log = tmp_path / "runs.log"
    lease = unique_name("fence", max_length=30)
    common: dict[str, Any] = {
        "namespace": namespace,
        "lease": lease,
        "log": log,
        "execution": execution,
    }
    a = candidate(
        name="a", hold=HOLD_A, workdir=tmp_path / "a", kubeconfig=link.through_relay, **common
    )
    b = candidate(name="b", hold=HOLD_B, workdir=tmp_path / "b", kubeconfig=link.direct, **common)
    try:
        a.start()
        b.start(leading=False)
        assert not b.logged("started"), f"expected B to stand by; log tail:\n{b.tail()}"
        for name in ("one", "two"):
            body = {
                "apiVersion": FENCE_PROBE.api_version,
                "kind": FENCE_PROBE.kind,
                "metadata": {"name": name, "namespace": namespace},
                "spec": {},
            }
            kube.create(FENCE_PROBE, body, namespace=namespace)
        a.eventually(lambda: of("a", runs(log)), describe="a run of A", timeout=60)
        yield Pair(a, b, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            link.relay.thaw()
        a.stop(timeout=15)
        b.stop(timeout=30)


def first_run_of_b(pair: Pair) -> float:
    """When B's first run started; returns once a whole run of B went by, long enough
    for a beat of A still going to have landed."""
    b, log = pair.b, pair.log
    b.eventually(lambda: of("b", runs(log)), describe="a run of B", timeout=60)
    first_b = min(run.start for run in of("b", runs(log)))
    b.eventually(
        lambda: [run for run in of("b", runs(log)) if run.last >= first_b + HOLD_B],
        describe="a whole run of B",
        timeout=30,
    )
    return first_b


def assert_no_run_of_a_after(first_b: float, log: Path) -> None:
    late = [run for run in of("a", runs(log)) if run.last >= first_b]
    assert not late, (
        f"expected no run of A going once B started one at {first_b:.2f}; "
        f"saw {len(late)} of A still beating, until "
        f"{max(run.last for run in late) - first_b:+.2f}s after: {late}"
    )


def logged_at(process: OperatorProcess, msg: str) -> float:
    ts = next(line["ts"] for line in process.lines if line.get("msg") == msg)
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


@pytest.mark.usefixtures("fence_probe_crd")
@pytest.mark.parametrize(
    "execution",
    # Cold, ansible-playbook is the runner's child and its workers leave its session:
    # they outlive the runner's exit unless it kills them first.
    [pytest.param("true", id="warm"), pytest.param("false", id="cold")],
)
def test_a_silent_leader_stops_its_runs_before_the_standby_starts_any(
    pair: Pair, link: Link
) -> None:
    link.relay.freeze()  # A's run holds on; A's Lease requests hang from now on
    frozen_at = time.time()

    first_b = first_run_of_b(pair)
    assert_no_run_of_a_after(first_b, pair.log)
    a = pair.a
    code = a.eventually(lambda: a.returncode, describe="A to exit", until=lambda c: c is not None)
    assert code == EXIT_LEADERSHIP_LOST, (
        f"expected A to exit with {EXIT_LEADERSHIP_LOST} (leadership lost); saw {code}; "
        f"log tail:\n{a.tail()}"
    )
    last_a = max(run.last for run in of("a", runs(pair.log)))
    print(
        f"\nfencing figures: after the freeze, A's last beat +{last_a - frozen_at:.2f}s, "
        f"B led +{logged_at(pair.b, 'became leader') - frozen_at:.2f}s, "
        f"B's first run +{first_b - frozen_at:.2f}s"
    )


@pytest.mark.usefixtures("fence_probe_crd")
def test_a_leader_stopped_keeps_its_lease_until_its_runs_ended(pair: Pair) -> None:
    a = pair.a
    a.terminate()
    stopped_at = time.time()

    first_b = first_run_of_b(pair)
    assert_no_run_of_a_after(first_b, pair.log)
    code = a.eventually(lambda: a.returncode, describe="A to exit", until=lambda c: c is not None)
    assert code == 0 and a.logged("released leadership"), (
        f"expected A to release the Lease and exit with 0; saw exit code {code}; "
        f"log tail:\n{a.tail()}"
    )
    last_a = max(run.last for run in of("a", runs(pair.log)))
    print(
        f"\nshutdown figures: after SIGTERM, A's last beat +{last_a - stopped_at:.2f}s, "
        f"B led +{logged_at(pair.b, 'became leader') - stopped_at:.2f}s"
    )
