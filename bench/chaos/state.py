"""The chaos benchmark's CRs: their kind, whether each has converged, and the churn.

Part of ``make chaos`` (``python -m bench.chaos``). :class:`Observer` lists the ``Chaos``
CRs and their child ConfigMaps every ``interval`` seconds, straight from the API server
(never through a relay), and records when each generation of each CR was first
seen converged truthfully; :class:`Churn` rewrites random CRs' specs meanwhile.
Both shrug off the API server being down: that is the point of the benchmark.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import devcluster
from bench import convergence, embedded, workloads
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import transport
from runner.kube.types import GVK

GROUP = "chaos.playbook-operator.dev"
CHAOS = GVK(GROUP, "v1", "Chaos")
#: Label of the poison CRs (bench/injection.py): never listed, never expected to converge.
POISON = f"{GROUP}/poison"
#: Lists of the CRs the benchmark judges: every one but the poison.
JUDGED: transport.Query = {"labelSelector": f"!{POISON}"}


def crd() -> dict[str, Any]:
    return workloads.open_crd(CHAOS, plural="chaos")


def client_for(cluster: devcluster.Cluster) -> kube_client.Client:
    """A direct admin client (never through a relay): each thread gets its own."""
    return kube_client.Client(kube_config.from_kubeconfig(str(cluster.kubeconfig)), timeout=10)


# -- what the cluster says ------------------------------------------------------


def claims_done(obj: dict[str, Any]) -> bool:
    """The status says the current spec has been applied."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    return convergence.successful(obj) and status.get("observedGeneration") == meta.get(
        "generation"
    )


def child_problem(obj: dict[str, Any], child: dict[str, Any] | None) -> str:
    """Why the child does not reflect ``obj``'s spec (empty: it does)."""
    want = str((obj.get("spec") or {}).get("value"))
    data = (child or {}).get("data") or {}
    if child is None:
        return "no child ConfigMap"
    if data.get("value") != want or data.get("uid") != obj.get("metadata", {}).get("uid"):
        return f"child has value {data.get('value')!r} uid {data.get('uid')}, spec {want!r}"
    return ""


def problems(obj: dict[str, Any], child: dict[str, Any] | None) -> list[str]:
    """Why ``obj`` is not converged at its current spec (empty: converged, truthfully)."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    found = []
    if not convergence.successful(obj):
        found.append("not Successful")
    if status.get("observedGeneration") != meta.get("generation"):
        found.append(
            f"observedGeneration {status.get('observedGeneration')} != generation "
            f"{meta.get('generation')}"
        )
    if problem := child_problem(obj, child):
        found.append(problem)
    return found


class Observer:
    """Lists the CRs and their children every ``interval`` s; when each generation converged.

    It also collects untruthful statuses: ``Successful`` at the current generation
    while the child does not hold that spec, seen in two polls in a row with the CR
    unchanged (one poll could have listed the CR and the children either side of a
    write).
    """

    def __init__(self, cluster: devcluster.Cluster, namespace: str, *, interval: float) -> None:
        self.namespace = namespace
        self._interval = interval
        self.converged: dict[str, dict[int, float]] = {}  # name -> generation -> first seen
        self.errors = 0
        self.lies: dict[tuple[str, str], str] = {}  # (name, resourceVersion) -> what was seen
        self._suspects: dict[str, str] = {}  # name -> resourceVersion seen lying once
        self._client = client_for(cluster)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Observer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        objs = self._client.list(CHAOS, namespace=self.namespace, query=JUDGED).get("items", [])
        children = self._client.list(embedded.CONFIGMAP, namespace=self.namespace)
        by_name = {c["metadata"]["name"]: c for c in children.get("items", [])}
        return objs, by_name

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                objs, children = self.snapshot()
            except Exception:  # the API server is down on purpose: try again
                self.errors += 1
                continue
            now = time.time()
            with self._cond:
                for obj in objs:
                    name = obj["metadata"]["name"]
                    child = children.get(f"{name}-chaos")
                    if not problems(obj, child):
                        generation = int(obj["metadata"]["generation"])
                        self.converged.setdefault(name, {}).setdefault(generation, now)
                    self._check_truth(obj, child)
                self._cond.notify_all()

    def _check_truth(self, obj: dict[str, Any], child: dict[str, Any] | None) -> None:
        name, version = obj["metadata"]["name"], str(obj["metadata"].get("resourceVersion"))
        problem = child_problem(obj, child) if claims_done(obj) else ""
        if not problem:
            self._suspects.pop(name, None)
        elif self._suspects.get(name) == version:
            generation = obj["metadata"].get("generation")
            self.lies.setdefault(
                (name, version), f"Successful at generation {generation}; {problem}"
            )
        else:
            self._suspects[name] = version

    def when(self, targets: dict[str, int]) -> float | None:
        """When the last of ``targets`` (name → generation) converged at it or later."""
        latest = 0.0
        with self._cond:
            for name, generation in targets.items():
                seen = [t for g, t in self.converged.get(name, {}).items() if g >= generation]
                if not seen:
                    return None
                latest = max(latest, min(seen))
        return latest

    def wait(self, targets: dict[str, int], *, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while (at := self.when(targets)) is None and time.monotonic() < deadline:
                self._cond.wait(1.0)
        return at


# -- the churn -------------------------------------------------------------------


class Churn:
    """Patches a random CR's ``spec.value`` ``rate`` times a second, in a thread."""

    def __init__(
        self, cluster: devcluster.Cluster, *, namespace: str, names: list[str], rate: float
    ) -> None:
        self.generations = dict.fromkeys(names, 1)  # as the last successful write left it
        self.written = 0
        self.failed = 0
        self._value = 0
        self._client = client_for(cluster)
        self._namespace = namespace
        self._names = names
        self._rate = rate
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Churn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def targets(self) -> dict[str, int]:
        with self._lock:
            return dict(self.generations)

    def probe(self, count: int) -> None:
        """Write ``count`` random CRs now (retrying), so a fault's recovery has fresh work."""
        for name in random.sample(self._names, min(count, len(self._names))):
            deadline = time.monotonic() + 60
            while not self.write(name) and time.monotonic() < deadline:
                time.sleep(0.5)

    def write(self, name: str) -> bool:
        with self._lock:
            self._value += 1
            value = self._value
        try:
            obj = self._client.patch(
                CHAOS, name=name, namespace=self._namespace, body={"spec": {"value": value}}
            )
        except Exception:  # the API server is down on purpose; the next write retries
            self.failed += 1
            return False
        with self._lock:
            self.written += 1
            generation = int(obj["metadata"]["generation"])
            self.generations[name] = max(self.generations[name], generation)
        return True

    def _loop(self) -> None:
        while not self._stop.wait(1 / self._rate):
            self.write(random.choice(self._names))


def obj(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": CHAOS.api_version,
        "kind": CHAOS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"value": 0},
    }
