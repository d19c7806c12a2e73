"""Reconcile benchmark on the embedded cluster; prints the figures the issues ask for.

    .venv/bin/python bench/reconcile.py [--latency-runs 12] [--burst 50]

Scenarios (one operator process, one CR kind, a one-task kubernetes.core role):

- floor: the same role run by plain ``ansible-playbook`` (median of N);
- latency: CR create → ``Successful`` (median of N, one CR at a time);
- burst: N CRs created at once → all ``Successful``;
- coalescing: 20 spec patches to one CR within one second → playbook runs;
- idle: runs during a quiet period (expected 0);
- API requests per reconcile (the operator's own and its runs', counted by the
  runner), with the proxy's cached reads on and off;
- operator RSS, idle and peak.

Timings come from a harness-side watch with monotonic timestamps. Run on a
quiet machine and compare ratios from one run; absolute numbers are noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import devcluster
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK
from tests.runner.harness import OperatorProcess

HERE = Path(__file__).resolve().parent
BENCH = GVK("bench.playbook-operator.dev", "v1", "Bench")
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "benches.bench.playbook-operator.dev"},
    "spec": {
        "group": BENCH.group,
        "names": {
            "kind": "Bench",
            "listKind": "BenchList",
            "plural": "benches",
            "singular": "bench",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
WATCHES = f"""\
- version: v1
  group: {BENCH.group}
  kind: Bench
  role: {HERE / "roles" / "bench"}
"""


class Converged:
    """Watches Bench objects; records when each reaches Successful at its generation."""

    def __init__(self, client: kube_client.Client, namespace: str) -> None:
        self.times: dict[str, float] = {}
        self.generations: dict[str, int] = {}
        self._cond = threading.Condition()
        self._client = client
        self._namespace = namespace
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        res = self._client.resource(BENCH)
        path = res.path(namespace=self._namespace)
        while True:
            try:
                for event in self._client.stream(path, query={}, read_timeout=600):
                    obj = event["object"]
                    meta, status = obj.get("metadata", {}), obj.get("status") or {}
                    ok = any(
                        c.get("type") == "Successful" and c.get("status") == "True"
                        for c in status.get("conditions") or []
                    )
                    if ok and status.get("observedGeneration") == meta.get("generation"):
                        with self._cond:
                            self.times[meta["name"]] = time.monotonic()
                            self.generations[meta["name"]] = int(meta["generation"])
                            self._cond.notify_all()
            except kube_errors.KubeError:
                time.sleep(0.2)

    def wait(self, names: list[str], *, generation: int = 1, timeout: float = 600) -> float:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not all(self.generations.get(n, 0) >= generation for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"not converged: {[n for n in names if n not in self.times]}"
                    )
                self._cond.wait(left)
            return max(self.times[n] for n in names)


def bench_obj(name: str, namespace: str, value: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": BENCH.api_version,
        "kind": "Bench",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"value": value},
    }


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def floor(kubeconfig: Path, namespace: str, runs: int) -> list[float]:
    env = {
        **os.environ,
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_ROLES_PATH": str(HERE / "roles"),
    }
    times = []
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    for index in range(runs + 1):
        extra = {
            "ansible_operator_meta": {"name": f"floor-{index}", "namespace": namespace},
            "value": index,
        }
        started = time.monotonic()
        subprocess.run(
            [
                playbook,
                "-i",
                "localhost,",
                "-c",
                "local",
                "-e",
                f"ansible_python_interpreter={sys.executable}",
                str(HERE / "floor.yml"),
                "-e",
                json.dumps(extra),
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if index:  # the first run warms .pyc files and the discovery cache
            times.append(time.monotonic() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency-runs", type=int, default=12)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--idle-seconds", type=float, default=15.0)
    args = parser.parse_args()

    cluster = devcluster.Cluster()
    if not (cluster.kubeconfig.is_file() and cluster.is_running()):
        devcluster.build(skip_overridden=True)
        cluster.start()
    client = kube_client.Client(kube_config.from_kubeconfig(str(cluster.kubeconfig)))
    crd_gvk = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
    with contextlib.suppress(kube_errors.ConflictError):
        client.create(crd_gvk, CRD)
    # One namespace per phase: an operator started on a namespace full of objects
    # would first work through their start-up reconciles.
    namespaces = {label: f"bench-{os.getpid()}-{label}" for label in ("cached", "uncached")}
    for name in namespaces.values():
        client.create(GVK("", "v1", "Namespace"), {"metadata": {"name": name}})
    namespace = namespaces["cached"]
    for _ in range(100):
        try:
            client.forget_discovery()
            client.resource(BENCH)
            break
        except kube_errors.KubeError:
            time.sleep(0.1)

    figures: dict[str, Any] = {}
    floor_times = floor(cluster.kubeconfig, namespace, args.latency_runs)
    figures["floor_ansible_playbook_s"] = statistics.median(floor_times)

    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for label, extra_args in (("cached", ()), ("uncached", ("--cache-reads=false",))):
            namespace = namespaces[label]
            watcher = Converged(client, namespace)
            workdir = Path(tmp) / label
            workdir.mkdir()
            operator = OperatorProcess(
                workdir=workdir,
                kubeconfig=cluster.kubeconfig,
                namespace=namespace,
                watches=WATCHES,
                args=("--max-concurrent-reconciles=2", *extra_args),
                env={"ANSIBLE_GATHERING": "explicit"},
            ).start()
            assert operator._proc is not None
            pid = operator._proc.pid
            # warm-up: pyc files, discovery cache, dependent watch
            client.create(BENCH, bench_obj(f"{label}-warm", namespace), namespace=namespace)
            watcher.wait([f"{label}-warm"])
            latencies = []
            requests_before = operator.metric("playbook_operator_api_requests_total")
            runs_before = operator.runs()
            for index in range(args.latency_runs):
                name = f"{label}-lat-{index}"
                started = time.monotonic()
                client.create(BENCH, bench_obj(name, namespace), namespace=namespace)
                latencies.append(watcher.wait([name]) - started)
            # A second reconcile of each: a spec change, where the child already exists.
            for index in range(args.latency_runs):
                client.patch(
                    BENCH,
                    name=f"{label}-lat-{index}",
                    namespace=namespace,
                    body={"spec": {"value": 1}},
                )
                watcher.wait([f"{label}-lat-{index}"], generation=2)
            runs = operator.runs() - runs_before
            results[label] = {
                "latency_median_s": statistics.median(latencies),
                "latency_p90_s": sorted(latencies)[int(0.9 * (len(latencies) - 1))],
                "api_requests_per_reconcile": (
                    operator.metric("playbook_operator_api_requests_total") - requests_before
                )
                / max(runs, 1),
            }
            if label == "cached":
                figures["operator_rss_idle_mib"] = rss_kib(pid) / 1024
                names = [f"burst-{i}" for i in range(args.burst)]
                started = time.monotonic()
                for name in names:
                    client.create(BENCH, bench_obj(name, namespace), namespace=namespace)
                figures[f"burst_{args.burst}_all_successful_s"] = watcher.wait(names) - started
                figures["operator_rss_peak_mib"] = rss_kib(pid, "VmHWM") / 1024

                runs_before = operator.runs()
                target = "coalesce"
                client.create(BENCH, bench_obj(target, namespace), namespace=namespace)
                watcher.wait([target])
                after_create = operator.runs()
                started = time.monotonic()
                for value in range(1, 21):
                    client.patch(
                        BENCH, name=target, namespace=namespace, body={"spec": {"value": value}}
                    )
                    time.sleep(max(0.0, started + value * 0.045 - time.monotonic()))
                figures["patches_window_s"] = time.monotonic() - started
                watcher.wait([target], generation=21)
                time.sleep(3)  # let any straggler run show up before counting
                figures["runs_for_20_patches"] = operator.runs() - after_create
                del runs_before

                idle_before = operator.runs()
                time.sleep(args.idle_seconds)
                figures[f"runs_while_idle_{args.idle_seconds:g}s"] = operator.runs() - idle_before
            operator.stop()
        figures["runs"] = results
        cached = results["cached"]["latency_median_s"]
        figures["overhead_vs_floor_s"] = cached - figures["floor_ansible_playbook_s"]
    print(json.dumps(figures, indent=2))
    for name in namespaces.values():
        client.delete(GVK("", "v1", "Namespace"), name=name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
