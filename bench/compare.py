"""Side by side with operator-sdk's Go ansible-operator v1.31 (``make bench-compare``).

    hack/ansible-operator/build.sh      # bin/ansible-operator, .venv-ansible-operator/
    .venv/bin/python -m bench.compare [--latency-runs 8] [--burst 50] [--no-cold]
        [--memcached-latency-runs 4] [--idle-seconds 20] [--json FILE]

The same scenarios on each runtime, each in its own namespace, 2 workers,
``ANSIBLE_GATHERING=explicit``, the same Ansible packages (the build script gives
ansible-operator a venv with ours' ansible-core, ansible and kubernetes, plus
ansible-runner 2.3 and ansible-runner-http):

- ``ansible-operator``: the Go runtime;
- ``warm``: our runner as it runs by default;
- ``cold``: our runner with ``--warm=false`` (``--no-cold`` leaves it out).

Scenarios, one-task role (``bench/workloads.py``):

1. CR → Successful, one new CR at a time, runtimes interleaved (median, range),
   and CPU seconds of each runtime's process tree per Ansible run;
2. N CRs created at once → all Successful, one runtime at a time;
3. 20 spec patches to one CR within about a second → Ansible runs until the
   role has applied the last value;
4. idle: CPU of the process tree over a quiet period with every CR above in
   place, runs in it (expected 0), RSS of the runtime (ours: runner + warm
   launchers) and of its whole process tree;
5. a new CR behind a restart backlog: the runtime is restarted with every CR
   above in place (each is reconciled again at start); once the backlog has
   started, a new CR is created → its Successful; then until the backlog drained.

And with the Memcached role (``roles/memcached`` calling ``operator_sdk.util`` modules,
as a role written for ansible-operator does): CR → its pods Running as the role
reports in status, CPU per run, runs per new CR. (Not CR → Successful: the role asks
for ``requeue_after`` while pods start, and ansible-operator sets Successful only
after a run that did not, ours after every run that succeeded.)

ansible-operator hard-codes ports 8888 and 5050 and /tmp/ansible-operator: run
this alone (it checks the ports; the artifacts go to a private mount when it
can make one). Ours gets free ports and a private runner dir.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import accounting, convergence, embedded, runtimes, tables, workloads
from runner.kube import client as kube_client
from runner.kube import errors as kube_errors

GO = "ansible-operator"
MiB = 1024 * 1024


@dataclass
class Contender:
    """One runtime on one workload: how to start it, its namespace, its watch."""

    name: str
    make: Callable[[Path], runtimes.Runtime]
    namespace: str
    watcher: convergence.Converged
    workdir: Path
    runtime: runtimes.Runtime | None = None
    starts: int = 0
    figures: dict[str, Any] = field(default_factory=dict)

    def start(self) -> runtimes.Runtime:
        self.starts += 1
        self.runtime = self.make(self.workdir / f"{self.name}-{self.starts}").start()
        return self.runtime

    @property
    def rt(self) -> runtimes.Runtime:
        assert self.runtime is not None, f"{self.name} is not running"
        return self.runtime

    def stop(self) -> None:
        if self.runtime is not None:
            self.runtime.stop()
            self.runtime = None


class Bench:
    def __init__(
        self,
        *,
        client: kube_client.Client,
        kubeconfig: Path,
        workdir: Path,
        workload: workloads.Workload,
        names: tuple[str, ...],
    ) -> None:
        self.client = client
        self.workload = workload
        tag = f"bench-{os.getpid()}-{workload.label}"
        self.contenders: list[Contender] = []
        for name in names:
            namespace = embedded.create_namespace(client, f"{tag}-{name}")

            def make(where: Path, name: str = name, namespace: str = namespace) -> runtimes.Runtime:
                if name == GO:
                    return runtimes.AnsibleOperator(
                        workdir=where,
                        kubeconfig=kubeconfig,
                        namespace=namespace,
                        watches=workload.watches(),
                    )
                return runtimes.Ours(
                    warm=name == "warm",
                    workdir=where,
                    kubeconfig=kubeconfig,
                    namespace=namespace,
                    watches=workload.watches(),
                )

            self.contenders.append(
                Contender(
                    name=name,
                    make=make,
                    namespace=namespace,
                    watcher=convergence.Converged(
                        client,
                        workload.gvk,
                        namespace,
                        done=workload.ready or convergence.successful,
                    ),
                    workdir=workdir / workload.label,
                )
            )

    def close(self) -> None:
        for contender in self.contenders:
            contender.stop()
        embedded.delete_namespaces(self.client, [c.namespace for c in self.contenders])

    def create(self, contender: Contender, name: str, **spec: Any) -> float:
        namespace = contender.namespace
        started = time.monotonic()
        self.client.create(
            self.workload.gvk, self.workload.obj(name, namespace, **spec), namespace=namespace
        )
        return started

    def reconcile(self, contender: Contender, name: str) -> float:
        started = self.create(contender, name)
        return contender.watcher.wait([name]) - started

    def warm_up(self) -> None:
        for contender in self.contenders:
            runtime = contender.rt
            if isinstance(runtime, runtimes.Ours):
                runtime.warm_up(functools.partial(self._warm_up_one, contender))
            else:
                for index in range(2):
                    self.reconcile(contender, f"warm-up-{index + 1}")
            convergence.settle(runtime.runs)

    def _warm_up_one(self, contender: Contender, index: int) -> float:
        return self.reconcile(contender, f"warm-up-{index}")

    def latency(self, runs: int) -> None:
        """New CRs one at a time, runtimes interleaved; CPU per run; runs per new CR."""
        before = {c.name: (runtimes.cpu(c.rt), c.rt.runs()) for c in self.contenders}
        requeued = {c.name: _requeued(c.rt) for c in self.contenders}
        times: dict[str, list[float]] = {c.name: [] for c in self.contenders}
        for index in range(runs):
            order = self.contenders[index % len(self.contenders) :]
            order += self.contenders[: index % len(self.contenders)]
            for contender in order:
                times[contender.name].append(self.reconcile(contender, f"latency-{index}"))
        for contender in self.contenders:
            cpu0, runs0 = before[contender.name]
            done = convergence.settle(contender.rt.runs) - runs0
            contender.figures.update(
                latency_s=times[contender.name],
                cpu_per_run_s=(runtimes.cpu(contender.rt) - cpu0) / max(done, 1),
                runs_per_new_cr=done / runs,
            )
            if isinstance(contender.rt, runtimes.Ours):
                contender.figures["requeued_per_new_cr"] = (
                    _requeued(contender.rt) - requeued[contender.name]
                ) / runs

    def burst(self, count: int) -> None:
        for contender in self.contenders:
            print(f"[{self.workload.label}] {count} CRs at once: {contender.name}", flush=True)
            runtime = contender.rt
            names = [f"burst-{i}" for i in range(count)]
            cpu0, runs0 = runtimes.cpu(runtime), runtime.runs()
            with accounting.PeakSampler(functools.partial(runtimes.tree_rss, runtime)) as peak:
                started, ticks = time.monotonic(), accounting.machine_ticks()
                for name in names:
                    self.create(contender, name)
                took = contender.watcher.wait(names) - started
                busy = accounting.machine_busy(ticks)
            done = convergence.settle(runtime.runs) - runs0
            contender.figures.update(
                burst_s=took,
                burst_machine_busy=busy,
                burst_cpu_per_run_s=(runtimes.cpu(runtime) - cpu0) / max(done, 1),
                burst_tree_rss_peak_bytes=peak.peak,
            )

    def patches(self, count: int = 20, *, window: float = 0.9) -> None:
        """``count`` spec patches within ``window`` s → runs until the last value is applied."""
        for contender in self.contenders:
            runtime = contender.rt
            self.reconcile(contender, "patched")
            runs0 = convergence.settle(runtime.runs)
            started = time.monotonic()
            for value in range(1, count + 1):
                self.client.patch(
                    self.workload.gvk,
                    name="patched",
                    namespace=contender.namespace,
                    body={"spec": {"value": value}},
                )
                time.sleep(max(0.0, started + value * window / count - time.monotonic()))
            deadline = time.monotonic() + 300
            while self._applied(contender, "patched") != str(count):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{contender.name}: value {count} never applied")
                time.sleep(0.2)
            contender.figures["runs_for_patches"] = convergence.settle(runtime.runs) - runs0
            contender.figures["patches_window_s"] = window

    def _applied(self, contender: Contender, name: str) -> str | None:
        try:
            found = self.client.get(
                embedded.CONFIGMAP, name=f"{name}-bench", namespace=contender.namespace
            )
        except kube_errors.NotFoundError:
            return None
        return str((found.get("data") or {}).get("value"))

    def idle(self, seconds: float) -> None:
        for contender in self.contenders:
            convergence.settle(contender.rt.runs)
        before = {c.name: (runtimes.cpu(c.rt), c.rt.runs()) for c in self.contenders}
        time.sleep(seconds)
        for contender in self.contenders:
            cpu0, runs0 = before[contender.name]
            contender.figures.update(
                idle_cpu_percent=100 * (runtimes.cpu(contender.rt) - cpu0) / seconds,
                idle_runs=contender.rt.runs() - runs0,
                idle_rss_bytes=contender.rt.rss(),
                idle_tree_rss_bytes=runtimes.tree_rss(contender.rt),
            )

    def restart(self) -> None:
        """Restart each runtime with its CRs in place; a new CR behind the backlog."""
        for contender in self.contenders:
            print(f"[{self.workload.label}] restart backlog: {contender.name}", flush=True)
            existing = len(
                self.client.list(self.workload.gvk, namespace=contender.namespace).get("items", [])
            )
            contender.stop()
            runtime = contender.start()
            started_at = time.monotonic()
            deadline = started_at + 300
            while runtime.runs() < 2:  # the backlog is under way
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{contender.name}: no run after restart")
                time.sleep(0.1)
            new_cr = self.reconcile(contender, "after-restart")
            drained = convergence.settle(runtime.runs, quiet=5)
            contender.figures.update(
                backlog_crs=existing,
                backlog_new_cr_s=new_cr,
                backlog_runs=drained,
                backlog_drained_s=time.monotonic() - started_at - 5,
            )


def _requeued(runtime: runtimes.Runtime) -> int:
    return runtime.requeued() if isinstance(runtime, runtimes.Ours) else 0


def report(results: dict[str, dict[str, dict[str, Any]]], names: tuple[str, ...]) -> str:
    ours = [n for n in names if n != GO]

    def row(
        label: str,
        key: str,
        fmt: Callable[[Any], str],
        workload: str = "one-task",
        *,
        ratios: bool = True,
    ) -> None:
        figures = results.get(workload, {})
        if not all(key in figures.get(n, {}) for n in names):
            return
        values = [figures[n][key] for n in names]
        cells = [fmt(v) for v in values]
        go = values[0]
        plain = [tables.median(v) if isinstance(v, list) else v for v in values]
        shown = [
            tables.ratio(plain[i + 1], plain[0]) if go and ratios else "" for i in range(len(ours))
        ]
        rows.append([label, *cells, *shown])

    def seconds(value: Any) -> str:
        return tables.spread(value) if isinstance(value, list) else f"{value:.1f} s"

    rows: list[list[str]] = []
    row("one-task role: CR → Successful", "latency_s", seconds)
    row("one-task role: CPU-s per reconcile", "cpu_per_run_s", lambda v: f"{v:.2f}")
    row("one-task role: runs per new CR", "runs_per_new_cr", lambda v: f"{v:.2f}")
    row("N CRs at once → all Successful", "burst_s", seconds)
    row("CPU-s per reconcile in that burst", "burst_cpu_per_run_s", lambda v: f"{v:.2f}")
    row(
        "machine CPU busy in that burst (all processes)",
        "burst_machine_busy",
        _percent,
        ratios=False,
    )
    row("process tree RSS, peak in that burst", "burst_tree_rss_peak_bytes", _mib)
    row("runs for 20 patches within ~1 s", "runs_for_patches", str)
    row("idle: CPU of the process tree", "idle_cpu_percent", lambda v: f"{v:.2f} %")
    row("idle: runs", "idle_runs", str, ratios=False)
    row("idle: RSS of the runtime (ours: runner + launchers)", "idle_rss_bytes", _mib)
    row("idle: RSS of the whole process tree", "idle_tree_rss_bytes", _mib)
    row("restart: CRs in the backlog", "backlog_crs", str, ratios=False)
    row("restart: new CR behind the backlog → Successful", "backlog_new_cr_s", seconds)
    row("restart: backlog drained after", "backlog_drained_s", seconds)
    row("Memcached role: CR → its pods Running, in status", "latency_s", seconds, "memcached")
    row("Memcached role: CPU-s per reconcile", "cpu_per_run_s", lambda v: f"{v:.2f}", "memcached")
    row("Memcached role: runs per new CR", "runs_per_new_cr", lambda v: f"{v:.2f}", "memcached")
    for name in ours:
        asked = results.get("memcached", {}).get(name, {}).get("requeued_per_new_cr")
        if asked is not None:
            rows.append(
                [f"... of them asked for by the role (requeue_after), {name}", f"{asked:.2f}"]
            )
    header = ["scenario", *names, *(f"{n}/{GO}" for n in ours)]
    return tables.table(header, rows)


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


def _mib(value: float) -> str:
    return f"{value / MiB:.0f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency-runs", type=int, default=8)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--memcached-latency-runs", type=int, default=4, help="0 skips it")
    parser.add_argument("--no-cold", action="store_true", help="leave our cold runs out")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()

    runtimes.AnsibleOperator.check()
    names: tuple[str, ...] = (GO, "warm") if args.no_cold else (GO, "warm", "cold")
    started = time.monotonic()
    cluster, client = embedded.connect()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        chosen = [workloads.one_task()]
        if args.memcached_latency_runs:
            chosen.append(workloads.memcached(Path(tmp), collection="operator_sdk.util"))
        for workload in chosen:
            workload.install(client)
            bench = Bench(
                client=client,
                kubeconfig=cluster.kubeconfig,
                workdir=Path(tmp),
                workload=workload,
                names=names,
            )
            label = workload.label
            try:
                for contender in bench.contenders:
                    contender.start()
                print(f"[{label}] warm-up", flush=True)
                bench.warm_up()
                if label == "memcached":
                    print(f"[{label}] CR → pods Running x{args.memcached_latency_runs}", flush=True)
                    bench.latency(args.memcached_latency_runs)
                else:
                    print(f"[{label}] CR → Successful x{args.latency_runs}", flush=True)
                    bench.latency(args.latency_runs)
                    bench.burst(args.burst)
                    print(f"[{label}] 20 rapid patches", flush=True)
                    bench.patches()
                    print(f"[{label}] idle {args.idle_seconds:g} s", flush=True)
                    bench.idle(args.idle_seconds)
                    bench.restart()
            finally:
                bench.close()
            results[label] = {c.name: c.figures for c in bench.contenders}
    tables.dump(args.json, results)
    print()
    print(report(results, names))
    print(f"\n(total {time.monotonic() - started:.0f} s; load average {os.getloadavg()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
