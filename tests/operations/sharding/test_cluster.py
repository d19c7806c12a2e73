"""Sharded mode on the embedded cluster: real runner processes share 60 ShardProbes.

Every run of the shard_probe role appends (replica, object, wave, start, end) to
one file. Across 3 → 2 → 4 replicas and a ``kill -9``, every object converges
after each spec change, no two runs of one object ever overlap, and each
membership change moves only the objects it must (consistent hashing).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import unique_name, wait_for
from tests.operations.sharding.cluster import (
    FIXTURES,
    LEASE_SECONDS,
    SHARD_PROBE,
    Replica,
    converged,
    overlaps,
    owned,
    runs,
    set_wave,
    shard_probe,
)

OBJECTS = 60
WITH_CHILD = 6  # the first objects also write a child ConfigMap (a dependent object)
CONFIGMAP = GVK("", "v1", "ConfigMap")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
VIEW = "playbook-operator.io/shard-view"
CONVERGE = 300.0  # seconds; generous: a loaded 2-core machine runs several suites at once

StartReplica = Callable[[str], Replica]


@pytest.fixture(scope="session")
def shard_probe_crd(cluster: Any) -> None:
    cluster.kubectl("apply", "-f", str(FIXTURES / "crd.yaml"))
    cluster.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/shardprobes.sharding.tests.playbook-operator.dev",
    )


@pytest.fixture
def run_log(tmp_path: Path) -> Path:
    return tmp_path / "runs.log"


@pytest.fixture
def start_replica(
    cluster: Any, namespace: str, shard_probe_crd: None, tmp_path: Path, run_log: Path
) -> Iterator[StartReplica]:
    group = unique_name("shards", max_length=24)
    started: list[Replica] = []

    def start(name: str) -> Replica:
        replica = Replica(
            workdir=tmp_path / f"{name}-{len(started)}",
            kubeconfig=Path(cluster.kubeconfig),
            namespace=namespace,
            group=group,
            name=name,
            log=run_log,
        )
        started.append(replica)
        replica.start()
        return replica

    yield start
    for replica in started:
        replica.stop()


def wait_shared(replicas: list[Replica]) -> None:
    """Until the live replicas agree on the members and own every object between them."""
    count = len(replicas)
    wait_for(
        lambda: (
            owned(replicas),
            [int(r.metric("playbook_operator_shard_members")) for r in replicas],
        ),
        until=lambda seen: seen[0].total() == OBJECTS and all(m == count for m in seen[1]),
        describe=f"{count} replicas seeing {count} members and owning {OBJECTS} objects in all",
        timeout=CONVERGE,
    )


def wait_views(kube: Client, namespace: str, members: list[str]) -> None:
    """Until every Lease of the group publishes the view of exactly ``members``."""
    want = ",".join(sorted(members))

    def views() -> dict[str, str]:
        listed = kube.list(LEASE, namespace=namespace).get("items") or []
        return {
            item["metadata"]["name"]: (item["metadata"].get("annotations") or {}).get(VIEW, "")
            for item in listed
            if VIEW in (item["metadata"].get("annotations") or {})
        }

    wait_for(
        views,
        until=lambda seen: len(seen) == len(members) and set(seen.values()) == {want},
        describe=f"{len(members)} shard Leases all publishing the view {want}",
        timeout=CONVERGE,
    )


def moved(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(key for key in after if before[key].replica != after[key].replica)


def test_replicas_share_the_objects_and_hand_them_over_without_overlap(
    kube: Client, namespace: str, start_replica: StartReplica, run_log: Path
) -> None:
    first_three = [start_replica(name) for name in ("r1", "r2", "r3")]
    names = [f"cr-{index:02d}" for index in range(OBJECTS)]
    keys = [f"{namespace}/{name}" for name in names]
    wait_views(kube, namespace, ["r1", "r2", "r3"])  # steady membership before any object
    for index, name in enumerate(names):
        body = shard_probe(name, namespace, 1, child=index < WITH_CHILD)
        kube.create(SHARD_PROBE, body, namespace=namespace)

    # 3 replicas: every object reconciled, by one replica each, roughly a third each.
    wave1 = converged(run_log, keys=keys, wave=1, timeout=CONVERGE)
    wait_shared(first_three)
    shares = Counter(run.replica for run in wave1.values())
    # The ring hashes the keys, whose namespace is random per run: 12/19/29 was seen once.
    assert all(10 <= shares[r] <= 32 for r in ("r1", "r2", "r3")), (
        f"expected each of 3 replicas to run roughly 20 of {OBJECTS} objects; saw {dict(shares)}"
    )
    ran_by: dict[str, set[str]] = {}
    for run in runs(run_log):
        ran_by.setdefault(run.key, set()).add(run.replica)
    shared = {key: who for key, who in ran_by.items() if len(who) > 1}
    assert not shared, f"expected one replica per object with steady membership; saw {shared}"

    # 3 → 2: r3 stops gracefully and releases its Lease; only its objects move.
    r1, r2, r3 = first_three
    assert r3.stop() == 0, f"expected a clean stop of r3; log tail:\n{r3.tail()}"
    wait_shared([r1, r2])
    set_wave(kube, namespace=namespace, names=names, wave=2)
    wave2 = converged(run_log, keys=keys, wave=2, timeout=CONVERGE)
    moved2 = moved(wave1, wave2)
    assert {wave1[key].replica for key in moved2} == {"r3"} and len(moved2) == shares["r3"], (
        f"expected exactly r3's {shares['r3']} objects to move; saw {len(moved2)}: "
        f"{Counter(wave1[key].replica for key in moved2)}"
    )

    # 2 → 4: r3 comes back, r4 joins; objects move only to them, about half.
    r3 = start_replica("r3")
    r4 = start_replica("r4")
    wait_shared([r1, r2, r3, r4])
    set_wave(kube, namespace=namespace, names=names, wave=3)
    wave3 = converged(run_log, keys=keys, wave=3, timeout=CONVERGE)
    moved3 = moved(wave2, wave3)
    assert {wave3[key].replica for key in moved3} <= {"r3", "r4"}, (
        f"expected objects to move only to the new replicas; saw "
        f"{Counter(wave3[key].replica for key in moved3)}"
    )
    assert 0.3 * OBJECTS <= len(moved3) <= 0.7 * OBJECTS, (
        f"expected about half of {OBJECTS} objects to move from 2 to 4 replicas; saw {len(moved3)}"
    )

    # kill -9 of r4: its objects are run by the others once its Lease expired.
    orphans = [key for key in keys if wave3[key].replica == "r4"]
    killed_at = time.time()
    r4.kill()
    set_wave(kube, namespace=namespace, names=names, wave=4)
    wait_shared([r1, r2, r3])
    takeover = time.time() - killed_at
    assert takeover <= LEASE_SECONDS + 15, (
        f"expected the survivors to own r4's objects within about its {LEASE_SECONDS}s Lease; "
        f"took {takeover:.1f}s"
    )
    wave4 = converged(run_log, keys=keys, wave=4, timeout=CONVERGE)
    moved4 = moved(wave3, wave4)
    assert moved4 == sorted(orphans), (
        f"expected exactly r4's {len(orphans)} objects to move; saw {len(moved4)}"
    )
    first_taken = min(wave4[key].start for key in orphans) - killed_at
    assert first_taken >= LEASE_SECONDS - 1, (
        f"expected r4's objects untouched until its {LEASE_SECONDS}s Lease expired; "
        f"the first ran {first_taken:.1f}s after the kill"
    )
    assert first_taken <= LEASE_SECONDS + 30, (
        f"expected r4's objects taken over soon after its Lease expired; "
        f"the first ran {first_taken:.1f}s after the kill"
    )

    # A dependent's event reaches its owner's replica only: deleting the child
    # ConfigMaps gets one run of each owner, by the replica that owns it.
    parents = keys[:WITH_CHILD]
    before = Counter(run.key for run in runs(run_log))
    for name in names[:WITH_CHILD]:
        kube.delete(CONFIGMAP, name=f"{name}-child", namespace=namespace)
    wait_for(
        lambda: Counter(run.key for run in runs(run_log)),
        until=lambda now: all(now[key] > before[key] for key in parents),
        describe=f"a run of each of {parents} after its child was deleted",
        timeout=CONVERGE,
    )

    def children() -> list[str]:
        listed = kube.list(CONFIGMAP, namespace=namespace).get("items") or []
        return sorted(item["metadata"]["name"] for item in listed)

    wanted = [f"{name}-child" for name in names[:WITH_CHILD]]
    wait_for(
        children,
        until=lambda found: set(wanted) <= set(found),
        describe=f"the child ConfigMaps {wanted} written again",
        timeout=CONVERGE,
    )
    rerun = [run for run in runs(run_log) if run.key in parents and run.wave == 4]
    strangers = [run for run in rerun if run.replica != wave4[run.key].replica]
    assert not strangers, (
        f"expected only the owners' replicas to run the parents of deleted children; "
        f"saw {strangers}"
    )

    # r4 comes back under the same id: it takes back exactly the objects it had, each
    # run once by it on the handover, without any spec change.
    back_at = time.time()
    r4 = start_replica("r4")
    wait_shared([r1, r2, r3, r4])
    wait_for(
        lambda: sorted(
            {run.key for run in runs(run_log) if run.replica == "r4" and run.start > back_at}
        ),
        until=lambda taken: taken == sorted(orphans),
        describe=f"r4 back to running its {len(orphans)} objects (shown: those it ran)",
        timeout=CONVERGE,
    )

    records = runs(run_log)
    clashes = overlaps(records)
    assert not clashes, f"expected no two runs of one object at once; saw {clashes[:5]}"
    acquired = sum(
        r.metric("playbook_operator_shard_handovers_total", direction="acquired")
        for r in (r1, r2, r3, r4)
    )
    assert acquired >= len(orphans), (
        f"expected the survivors to count at least {len(orphans)} acquired objects; saw {acquired}"
    )
    print(
        f"\nsharding figures: runs={len(records)} shares(3)={dict(shares)} "
        f"moved 3->2={len(moved2)} 2->4={len(moved3)} 4->3 (kill -9)={len(moved4)} "
        f"ownership taken over {takeover:.1f}s after the kill, first run {first_taken:.1f}s"
    )
