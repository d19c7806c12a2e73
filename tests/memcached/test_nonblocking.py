"""Slow rollouts never park the runner's workers.

Pods on the test pool take 20 s to get ready (tag ``*-ready-after-20s``). With the
runner's 2 workers, 20 Memcacheds are upgraded at once; a reconcile that waited for its
rollout would hold a worker for those 20 s, and everything behind it would wait. The
role reports and returns instead (Progressing, the old version still serving), and a
Memcached created meanwhile gets its first Successful as fast as its own run allows: at
worst after a run already in progress on a worker.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for
from testkit.pool import placement
from tests.memcached.conftest import MEMCACHED, Create
from tests.memcached.test_levels import conditions, rolled_out, summary

COUNT = 20
OLD = "1.6.38-ready-after-20s"
NEW = "1.6.39-ready-after-20s"
#: Watch latency, status writes, polling: what a first Successful may take beyond runs.
SLACK = 5.0


class FirstSeen:
    """Polls the namespace's Memcacheds; keeps, per (name, observedGeneration), the first
    status seen and when, and when each name was first seen Successful."""

    def __init__(self, kube: Client, namespace: str) -> None:
        self.first: dict[tuple[str, int], dict[str, Any]] = {}
        self.successful: dict[str, float] = {}
        self._kube = kube
        self._namespace = namespace
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                items = self._kube.list(MEMCACHED, namespace=self._namespace)["items"]
            except kube_errors.KubeError:
                continue
            now = time.monotonic()
            for obj in items:
                name = obj["metadata"]["name"]
                status = obj.get("status") or {}
                observed = status.get("observedGeneration")
                if observed is not None:
                    self.first.setdefault((name, int(observed)), obj)
                if conditions(obj).get("Successful", {}).get("status") == "True":
                    self.successful.setdefault(name, now)
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _runs(operator: OperatorProcess, name: str) -> list[float]:
    """Durations of the finished reconciles of ``name``, in order."""
    return [
        float(line["seconds"])
        for line in list(operator.lines)
        if line.get("msg") == "reconciled" and str(line.get("object", "")).endswith(f"/{name}")
    ]


def test_slow_rollouts_do_not_delay_a_new_memcached(
    kube: Client, mc_namespace: str, pool: str, create: Create, operator: OperatorProcess
) -> None:
    names = [f"slow-{i:02d}" for i in range(COUNT)]
    for name in names:
        create(name, size=1, version=OLD, **placement(pool))

    def versions() -> dict[str, Any]:
        items = kube.list(MEMCACHED, namespace=mc_namespace)["items"]
        return {o["metadata"]["name"]: o for o in items}

    wait_for(
        versions,
        until=lambda seen: all(
            name in seen and rolled_out(seen[name], size=1, version=OLD) for name in names
        ),
        describe=f"{COUNT} Memcacheds rolled out with {OLD}",
        timeout=600,
        interval=1,
    )

    watcher = FirstSeen(kube, mc_namespace)
    try:
        for name in names:
            kube.patch(
                MEMCACHED, name=name, namespace=mc_namespace, body={"spec": {"version": NEW}}
            )
        # Every upgrade's run reports and returns while its pod is still starting: the
        # first status of generation 2 says Progressing, and the old version serves.
        wait_for(
            lambda: [n for n in names if (n, 2) not in watcher.first],
            until=lambda missing: not missing,
            describe=f"a status of generation 2 from all {COUNT} upgraded Memcacheds",
            timeout=600,
            interval=0.5,
        )
        for name in names:
            first = watcher.first[(name, 2)]
            found = conditions(first)
            assert (
                found["Progressing"]["status"] == "True"
                and first["status"].get("version") == OLD
                and found["Available"]["status"] == "True"
            ), f"{name}: expected a run that reports the rollout under way, saw {summary(first)}"

        # Rollouts are under way, and requeued runs keep both workers busy: a new
        # Memcached must wait for nothing but a run already in progress.
        started = time.monotonic()
        create("newcomer", size=1)
        wait_for(
            lambda: watcher.successful.get("newcomer"),
            describe="the newcomer's first Successful",
            timeout=300,
            interval=0.1,
        )
        latency = watcher.successful["newcomer"] - started
        still_rolling = [
            n
            for n, o in versions().items()
            if n in names and not rolled_out(o, size=1, version=NEW)
        ]
    finally:
        watcher.stop()

    own = operator.eventually(
        lambda: _runs(operator, "newcomer"),
        describe="the newcomer's reconcile logged",
    )[0]
    longest = max(seconds for name in names for seconds in _runs(operator, name))
    # The figures, for `pytest -s`.
    print(
        f"\nnewcomer Successful after {latency:.1f}s; its run {own:.1f}s; longest run of "
        f"the upgraded ones {longest:.1f}s; still rolling then: {len(still_rolling)}/{COUNT}"
    )
    assert latency <= own + longest + SLACK, (
        f"expected the newcomer Successful within its own run ({own:.1f}s) + one run in "
        f"progress ({longest:.1f}s, the longest) + {SLACK}s; saw {latency:.1f}s"
    )
    assert still_rolling, "the upgrades were all done before the newcomer: nothing was tested"

    wait_for(
        versions,
        until=lambda seen: all(rolled_out(seen[name], size=1, version=NEW) for name in names),
        describe=f"{COUNT} Memcacheds rolled out with {NEW}",
        timeout=600,
        interval=1,
    )
