"""The chaos benchmark's faults: how each is injected, and what recovery took.

Part of ``make chaos`` (``python -m bench.chaos``). Each fault takes the benchmark's own
cluster or the leader away, records when it started and ended, and
:func:`inject` then measures how long until a replica leads and the operator has
caught up with every spec written up to the fault's end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import devcluster
from bench.chaos import history, runners, state
from devcluster import binaries

FAULTS = ("kill9", "apiserver", "etcd", "freeze", "handover", "poison")
#: Nesting of a poison CR's spec: the API server takes up to 10000 levels, Python's
#: json module gives up near 1000.
POISON_DEPTH = 3000


@dataclass(kw_only=True)
class Chaos:
    """Everything a fault needs."""

    cluster: devcluster.Cluster
    namespace: str
    replicas: list[runners.Replica]
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
    note: str = ""  # what the fault's target did, when it says something

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
    leader = runners.leader(chaos.replicas, timeout=60)
    fault.at = time.time()
    leader.kill()  # the supervisor starts it again, as a standby
    fault.healed = time.time()


def handover(chaos: Chaos, fault: Fault) -> None:
    leader = runners.leader(chaos.replicas, timeout=60)
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
    leader = runners.leader(chaos.replicas, timeout=60)
    instance = leader.instance
    fault.at = time.time()
    leader.relay.freeze()
    time.sleep(chaos.args.freeze)  # the partition itself
    fenced = leader.instance != instance or leader.pid() is None
    fault.note = f"frozen {instance} " + ("exited" if fenced else "still running at the thaw")
    leader.relay.thaw()
    leader.relay.reset()
    fault.healed = time.time()


def poison(chaos: Chaos, fault: Fault) -> None:
    """Create a CR nested too deep to decode: the informer must go on with the others."""
    name = f"poison-{fault.at:.0f}"
    meta = {"name": name, "namespace": chaos.namespace, "labels": {state.POISON: "true"}}
    head = json.dumps({"apiVersion": state.CHAOS.api_version, "kind": state.CHAOS.kind})
    deep = '{"a":' * POISON_DEPTH + "0" + "}" * POISON_DEPTH
    body = f'{head[:-1]}, "metadata": {json.dumps(meta)}, "spec": {{"value": 0, "deep": {deep}}}}}'
    fault.at = time.time()
    chaos.cluster.kubectl("create", "-f", "-", input=body)
    fault.healed = time.time()
    fault.note = f"{name} created"


def poison_status(chaos: Chaos, fault: Fault) -> None:
    """What the poison CR's status says once the others have converged (kubectl reads it)."""
    name = fault.note.split()[0]
    done = chaos.cluster.kubectl(
        "get",
        "-n",
        chaos.namespace,
        f"{state.CHAOS.kind.lower()}.{state.GROUP}",
        name,
        "-o",
        'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}: {.message} {end}',
        check=False,
    )
    fault.note = f"{name}: {(done.stdout or done.stderr).strip()[:120] or 'no status'}"


INJECT: dict[str, Callable[[Chaos, Fault], None]] = {
    "kill9": kill9,
    "apiserver": apiserver,
    "etcd": etcd,
    "freeze": freeze,
    "handover": handover,
    "poison": poison,
}


def wait_limit(args: argparse.Namespace) -> float:
    """Seconds a wait may last: ``--converge-timeout``, cut short by ``--budget``."""
    return max(1.0, min(float(args.converge_timeout), float(args.deadline) - time.time()))


def _leader_name(replicas: list[runners.Replica]) -> str:
    found = [r.instance for r in replicas if r.leading()]
    return found[0] if found else "-"


def inject(
    *,
    chaos: Chaos,
    kind: str,
    churn: state.Churn,
    observer: state.Observer,
    records: history.Records,
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
        leading = runners.leader(
            chaos.replicas,
            timeout=wait_limit(chaos.args),
            # These faults take the leader away: another instance must lead.
            other_than=fault.leader_before if kind in ("kill9", "freeze", "handover") else "",
        )
        fault.led = time.time()
        fault.leader_after = leading.instance
    fault.converged = observer.wait(targets, timeout=wait_limit(chaos.args))
    fault.runs_after = records.count()
    if kind == "poison":
        poison_status(chaos, fault)
    seconds = fault.converge_seconds
    print(
        f"  {kind}: outage {fault.outage:.1f} s, converged "
        + (f"{seconds:.1f} s after" if seconds is not None else "NOT within the timeout")
        + f" (leader now {fault.leader_after})",
        file=sys.stderr,
        flush=True,
    )
    return fault
