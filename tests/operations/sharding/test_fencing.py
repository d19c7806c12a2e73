"""Fencing of a sharded replica whose API connection goes silent.

Replica r1 talks to the API server through a relay (testkit/relay.py), r2 directly.
The relay is frozen while r1 runs long ShardProbe runs (r2's are short): r1's Lease
requests hang instead of failing. r2 takes r1's objects once r1's Lease expired; by
then r1 must have ended its runs (exit code 3), so no two runs of one object
overlap. A run that r1's exit killed records no end (the shard_probe role writes a
run's line as it ends; its start goes to a second file as it starts).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from testkit import relay as relay_mod
from testkit.helpers import unique_name
from tests.operations.sharding.cluster import SHARD_PROBE, Replica, overlaps, runs, shard_probe
from tests.operations.sharding.test_cluster import shard_probe_crd, wait_views  # noqa: F401 (fixture)

OBJECTS = 8  # both replicas own some: all on r2 has odds 1 in 256
# r1's runs outlast its 6 s Lease by far: one going at the freeze overlaps r2's run of
# the object unless r1 ends it. r2's are short, to keep the test quick.
HOLD_R1, HOLD_R2 = 20, 1
EXIT_FENCED = 3


@pytest.fixture
def relay(cluster: Any) -> Iterator[relay_mod.Relay]:
    host, port = relay_mod.api_address(Path(cluster.kubeconfig))
    with relay_mod.Relay(target_host=host, target_port=port) as started:
        yield started


@pytest.mark.usefixtures("shard_probe_crd")
def test_a_silent_replica_ends_its_runs_before_another_takes_its_objects(
    cluster: Any, kube: Client, namespace: str, relay: relay_mod.Relay, tmp_path: Path
) -> None:
    log, starts = tmp_path / "runs.log", tmp_path / "starts.log"
    group = unique_name("fence", max_length=24)
    through_relay = relay_mod.write_kubeconfig(
        Path(cluster.kubeconfig), tmp_path / "relay.kubeconfig", port=relay.port
    )
    r1, r2 = (
        Replica(
            workdir=tmp_path / name,
            kubeconfig=kubeconfig,
            namespace=namespace,
            group=group,
            name=name,
            log=log,
        )
        for name, kubeconfig in (("r1", through_relay), ("r2", Path(cluster.kubeconfig)))
    )
    for replica, hold in ((r1, HOLD_R1), (r2, HOLD_R2)):
        replica.env |= {"SHARD_PROBE_STARTS": str(starts), "SHARD_PROBE_HOLD": str(hold)}

    def started_by(replica: str) -> set[str]:
        lines = starts.read_text().splitlines() if starts.exists() else []
        return {line.split()[1] for line in lines if line.split()[0] == replica}

    try:
        r1.start()
        r2.start()
        wait_views(kube, namespace, ["r1", "r2"])
        keys = []
        for index in range(OBJECTS):
            body = shard_probe(f"cr-{index}", namespace, 1)
            kube.create(SHARD_PROBE, body, namespace=namespace)
            keys.append(f"{namespace}/cr-{index}")
        r1.eventually(lambda: started_by("r1"), describe="a run of r1 going", timeout=60)

        relay.freeze()  # r1's runs hold on; its Lease requests hang from now on
        frozen_at = time.time()

        r2.eventually(
            lambda: {run.key for run in runs(log) if run.replica == "r2"},
            until=lambda ran: ran == set(keys),
            describe=f"r2 to have run all {OBJECTS} objects (shown: those it ran)",
            timeout=90,
        )
        # Until r1 exited, or every run it started recorded its end (a late end shows).
        r1.eventually(
            lambda: (
                r1.returncode is not None
                or started_by("r1") <= {run.key for run in runs(log) if run.replica == "r1"}
            ),
            describe="r1 to exit or its runs to end",
            timeout=60,
        )
        clashes = overlaps(runs(log))
        assert not clashes, (
            f"expected no two runs of one object at once; saw {len(clashes)}: {clashes[:3]}"
        )
        code = r1.eventually(
            lambda: r1.returncode, describe="r1 to exit", until=lambda c: c is not None, timeout=30
        )
        assert code == EXIT_FENCED, (
            f"expected r1 to exit with {EXIT_FENCED} (fenced); saw {code}; log tail:\n{r1.tail()}"
        )
        taken = [
            run.start for run in runs(log) if run.replica == "r2" and run.key in started_by("r1")
        ]
        print(
            f"\nsharded fencing figures: r2 first ran an object r1 had been running "
            f"+{min(taken) - frozen_at:.2f}s after the freeze"
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            relay.thaw()
        r1.stop(timeout=15)
        r2.stop(timeout=30)
