"""The chaos benchmark's faults: how each is injected, and what recovery took.

Part of ``make chaos`` (``bench/chaos.py``). Each fault takes the benchmark's own
cluster or the leader away, records when it started and ended, and
:func:`inject` then measures how long until a replica leads and the operator has
caught up with every spec written up to the fault's end.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import devcluster
from bench import chaos_replicas, chaos_runs, chaos_state
from devcluster import binaries

FAULTS = ("kill9", "apiserver", "etcd", "freeze", "handover")


@dataclass(kw_only=True)
class Chaos:
    """Everything a fault needs."""

    cluster: devcluster.Cluster
    replicas: list[chaos_replicas.Replica]
    args: argparse.Namespace


@dataclass
class Fault:
    kind: str
    at: float  # injected (time.time())
    healed: float = 0.0  # the fault is over from here on
    converged: float | None = None  # the work outstanding at `healed` is done
    led: float | None = None  # a replica leads (again) after the fault
    leader_before: str = ""
    leader_after: str = ""
    runs_before: int = 0
    runs_after: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def outage(self) -> float:
        return self.healed - self.at

    @property
    def leader_seconds(self) -> float | None:
        """From the fault's injection until a replica leads again (checked after it ended)."""
        return None if self.led is None else self.led - self.at

    @property
    def converge_seconds(self) -> float | None:
        return None if self.converged is None else max(0.0, self.converged - self.healed)


def _ready(cluster: devcluster.Cluster, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _readyz(cluster):
        if time.monotonic() > deadline:
            raise TimeoutError(f"expected the API server /readyz ok within {timeout:g}s")
        time.sleep(0.2)


def _readyz(cluster: devcluster.Cluster) -> bool:
    try:
        return bool(cluster.admin_api().readyz()[0])
    except Exception:
        return False


def kill9(chaos: Chaos, fault: Fault) -> None:
    leader = chaos_replicas.leader(chaos.replicas, timeout=60)
    fault.at = time.time()
    leader.kill()  # the supervisor starts it again, as a standby
    fault.healed = time.time()


def handover(chaos: Chaos, fault: Fault) -> None:
    leader = chaos_replicas.leader(chaos.replicas, timeout=60)
    fault.at = time.time()
    leader.terminate()  # releases the Lease; the supervisor starts it again
    fault.healed = time.time()


def _component(chaos: Chaos, fault: Fault, name: str) -> None:
    fault.at = time.time()
    chaos.cluster.stop_component(name)
    time.sleep(chaos.args.outage)  # the outage itself: how long the component stays down
    chaos.cluster.start_component(name, timeout=60)
    _ready(chaos.cluster, timeout=120)
    fault.healed = time.time()


def apiserver(chaos: Chaos, fault: Fault) -> None:
    _component(chaos, fault, binaries.APISERVER)


def etcd(chaos: Chaos, fault: Fault) -> None:
    _component(chaos, fault, binaries.ETCD)


def freeze(chaos: Chaos, fault: Fault) -> None:
    leader = chaos_replicas.leader(chaos.replicas, timeout=60)
    instance = leader.instance
    fault.at = time.time()
    leader.relay.freeze()
    time.sleep(chaos.args.freeze)  # the partition itself
    fault.extra["frozen_instance_exited"] = leader.instance != instance or leader.pid() is None
    leader.relay.thaw()
    leader.relay.reset()
    fault.healed = time.time()


INJECT: dict[str, Callable[[Chaos, Fault], None]] = {
    "kill9": kill9,
    "apiserver": apiserver,
    "etcd": etcd,
    "freeze": freeze,
    "handover": handover,
}


def _leader_name(replicas: list[chaos_replicas.Replica]) -> str:
    found = [r.instance for r in replicas if r.leading()]
    return found[0] if found else "-"


def inject(
    *,
    chaos: Chaos,
    kind: str,
    churn: chaos_state.Churn,
    observer: chaos_state.Observer,
    records: chaos_runs.Records,
) -> Fault:
    fault = Fault(kind=kind, at=time.time(), leader_before=_leader_name(chaos.replicas))
    fault.runs_before = records.count()
    print(f"  {kind}: injecting (leader {fault.leader_before})", file=sys.stderr, flush=True)
    INJECT[kind](chaos, fault)
    # What was written before the fault ended, and fresh writes right after it: the time
    # to converge is how long until the operator has caught up with both.
    churn.probe(chaos.args.probes)
    targets = churn.targets()
    with contextlib.suppress(TimeoutError):
        leading = chaos_replicas.leader(
            chaos.replicas,
            timeout=chaos.args.converge_timeout,
            # These faults take the leader away: another instance must lead.
            other_than=fault.leader_before if kind in ("kill9", "freeze", "handover") else "",
        )
        fault.led = time.time()
        fault.leader_after = leading.instance
    fault.converged = observer.wait(targets, timeout=chaos.args.converge_timeout)
    fault.runs_after = records.count()
    seconds = fault.converge_seconds
    print(
        f"  {kind}: outage {fault.outage:.1f} s, converged "
        + (f"{seconds:.1f} s after" if seconds is not None else "NOT within the timeout")
        + f" (leader now {fault.leader_after})",
        file=sys.stderr,
        flush=True,
    )
    return fault
