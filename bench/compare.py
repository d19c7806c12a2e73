"""Side by side with operator-sdk's Go ansible-operator v1.31 (``make bench-compare``).

    hack/ansible-operator/build.sh      # bin/ansible-operator, .venv-ansible-operator/
    .venv/bin/python -m bench.compare [--latency-runs 8] [--burst 50] [--no-cold]
        [--memcached-latency-runs 4] [--idle-seconds 20] [--no-idle-release]
        [--restart-crs 300] [--json FILE] [--write-doc [--doc FILE]]

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
4. idle: CPU of the process tree over ``--idle-seconds`` with every CR above in
   place, runs in it (expected 0), RSS of the runtime (ours: runner + warm
   launchers) and of its whole process tree; then RSS of the runtime again once
   our launchers' idle release (the runner's default ``--warm-launcher-idle-seconds``)
   has passed: when every warm launcher has exited, or that default plus 30 s
   after the runs stopped (``--no-idle-release`` skips this wait; so does a runner
   without that setting);
5. a new CR behind a restart backlog: the namespace is topped up to
   ``--restart-crs`` CRs (created while the runtime runs, until all Successful),
   then the runtime is restarted with them in place (each is reconciled again at
   start; ours spreads the unchanged ones over ``--startup-resync-window``); once
   the backlog has started, a new CR is created → its Successful; then until every
   CR of the backlog ran again and the runs stopped for 5 s.

And with the Memcached role (``roles/memcached`` calling ``operator_sdk.util`` modules,
as a role written for ansible-operator does): CR → its pods Running as the role
reports in status, CPU per run, runs per new CR. (Not CR → Successful: the role asks
for ``requeue_after`` while pods start, and ansible-operator sets Successful only
after a run that did not, ours after every run that succeeded.)

``--write-doc`` (``make bench-compare``'s default ``BENCH_ARGS``): at the end of the run,
the table and the paragraph above it (date, commit, load average range, versions,
arguments) replace what lies between ``<!-- bench-compare:begin -->`` and
``<!-- bench-compare:end -->`` in ``--doc`` (docs/performance.md); checked before
the run starts.

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

from bench import accounting, convergence, doc_tables, embedded, runtimes, tables, workloads
from runner.kube import client as kube_client
from runner.kube import errors as kube_errors

GO = "ansible-operator"
#: After the launchers' idle release, how long a launcher may still take to exit.
RELEASE_GRACE = 30.0
#: Where ``--write-doc`` puts the table in ``--doc``.
MARKERS = doc_tables.Markers("bench-compare")


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
                burst_crs=count,
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
            contender.figures.update(
                patches=count,
                patches_window_s=window,
                runs_for_patches=convergence.settle(runtime.runs) - runs0,
            )

    def _applied(self, contender: Contender, name: str) -> str | None:
        try:
            found = self.client.get(
                embedded.CONFIGMAP, name=f"{name}-bench", namespace=contender.namespace
            )
        except kube_errors.NotFoundError:
            return None
        return str((found.get("data") or {}).get("value"))

    def count(self, contender: Contender) -> int:
        """CRs of the workload in the contender's namespace."""
        listed = self.client.list(self.workload.gvk, namespace=contender.namespace)
        return len(listed.get("items", []))

    def idle(self, seconds: float, *, release: float | None) -> None:
        """Quiet for ``seconds``: CPU, runs, RSS; with ``release`` (the launchers' idle
        release, s), RSS again once it has passed."""
        for contender in self.contenders:
            convergence.settle(contender.rt.runs)
        quiet_since = time.monotonic()
        before = {c.name: (runtimes.cpu(c.rt), c.rt.runs()) for c in self.contenders}
        time.sleep(seconds)
        for contender in self.contenders:
            cpu0, runs0 = before[contender.name]
            contender.figures.update(
                idle_s=seconds,
                idle_crs=self.count(contender),
                idle_cpu_percent=100 * (runtimes.cpu(contender.rt) - cpu0) / seconds,
                idle_runs=contender.rt.runs() - runs0,
                idle_rss_bytes=contender.rt.rss(),
                idle_tree_rss_bytes=runtimes.tree_rss(contender.rt),
            )
        if release is not None:
            self._released(quiet_since, release=release)

    def _released(self, quiet_since: float, *, release: float) -> None:
        """Wait until our warm launchers exited (or ``release`` + 30 s of quiet), then RSS."""
        print(
            f"[{self.workload.label}] idle until the launchers' release ({release:g} s)", flush=True
        )
        deadline = quiet_since + release + RELEASE_GRACE
        left = self._launchers()
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = self._launchers()
        if left:
            print(f"[{self.workload.label}] launchers still there: {left}", flush=True)
        after = time.monotonic() - quiet_since
        for contender in self.contenders:
            contender.figures.update(
                launcher_idle_s=release,
                released_after_s=after,
                released_rss_bytes=contender.rt.rss(),
                released_launchers=left.get(contender.name, 0),
            )

    def _launchers(self) -> dict[str, int]:
        """Warm launchers still running, by runtime (ours only)."""
        found = {
            c.name: len(c.rt.launchers())
            for c in self.contenders
            if isinstance(c.rt, runtimes.Ours)
        }
        return {name: count for name, count in found.items() if count}

    def top_up(self, count: int) -> None:
        """Create CRs until each namespace holds ``count``, under the running runtime,
        and wait until all are Successful and the runs stopped."""
        for contender in self.contenders:
            names = [f"backlog-{i}" for i in range(count - self.count(contender))]
            if not names:
                continue
            print(f"[{self.workload.label}] {len(names)} more CRs: {contender.name}", flush=True)
            for name in names:
                self.create(contender, name)
            contender.watcher.wait(names, timeout=900 + 5 * len(names))
            convergence.settle(contender.rt.runs)

    def restart(self) -> None:
        """Restart each runtime with its CRs in place; a new CR behind the backlog."""
        for contender in self.contenders:
            print(f"[{self.workload.label}] restart backlog: {contender.name}", flush=True)
            existing = self.count(contender)
            contender.stop()
            runtime = contender.start()
            started_at = time.monotonic()
            if not _runs_reach(runtime, 2, timeout=300):  # the backlog is under way
                raise TimeoutError(f"{contender.name}: no run after restart")
            new_cr = self.reconcile(contender, "after-restart")
            # Every CR runs again (ours spreads unchanged ones over its resync window,
            # with pauses longer than the quiet below): wait for as many runs first.
            if not _runs_reach(runtime, existing + 1, timeout=900 + 5 * existing):
                print(f"[{self.workload.label}] {contender.name}: fewer runs than CRs", flush=True)
            drained = convergence.settle(runtime.runs, quiet=5)
            contender.figures.update(
                backlog_crs=existing,
                backlog_new_cr_s=new_cr,
                backlog_runs=drained,
                backlog_drained_s=time.monotonic() - started_at - 5,
            )


def _runs_reach(runtime: runtimes.Runtime, count: int, *, timeout: float) -> bool:
    """Wait until ``runtime`` finished ``count`` runs since it started; False on timeout."""
    deadline = time.monotonic() + timeout
    while runtime.runs() < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _requeued(runtime: runtimes.Runtime) -> int:
    return runtime.requeued() if isinstance(runtime, runtimes.Ours) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency-runs", type=int, default=8)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument(
        "--no-idle-release",
        action="store_true",
        help="no second idle RSS reading after our launchers' idle release (saves ~150 s)",
    )
    parser.add_argument(
        "--restart-crs",
        type=int,
        default=300,
        metavar="N",
        help="CRs in each namespace when the runtime restarts (default 300)",
    )
    parser.add_argument("--memcached-latency-runs", type=int, default=4, help="0 skips it")
    parser.add_argument("--no-cold", action="store_true", help="leave our cold runs out")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument(
        "--write-doc",
        action="store_true",
        help="at the end, write the table and its paragraph between --doc's bench-compare markers",
    )
    parser.add_argument(
        "--doc",
        type=Path,
        default=workloads.ROOT / "docs" / "performance.md",
        help="the doc --write-doc rewrites (default docs/performance.md)",
    )
    args = parser.parse_args(argv)

    runtimes.AnsibleOperator.check()
    if args.write_doc:
        doc_tables.check(args.doc, markers=MARKERS)
    release = None if args.no_idle_release else runtimes.launcher_idle_seconds()
    if release is None and not args.no_idle_release:
        print(
            "no idle RSS reading after the launchers' idle release: this runner's settings"
            " (runner/config/sections.py) have no warm_launcher_idle_seconds above 0",
            flush=True,
        )
    names: tuple[str, ...] = (GO, "warm") if args.no_cold else (GO, "warm", "cold")
    started = time.monotonic()
    with doc_tables.LoadRange() as load:
        results = run(args, names=names, release=release)
    tables.dump(args.json, results)
    table = doc_tables.side_by_side(results, names)
    print()
    print(table)
    print(f"\n(total {time.monotonic() - started:.0f} s; load average {os.getloadavg()})")
    if args.write_doc:
        about = doc_tables.provenance(load=load.seen, command=command(args))
        doc_tables.write(args.doc, f"{doc_tables.paragraph(about)}\n\n{table}", markers=MARKERS)
        print(f"wrote the table into {args.doc}")
    return 0


def run(
    args: argparse.Namespace, *, names: tuple[str, ...], release: float | None
) -> dict[str, dict[str, dict[str, Any]]]:
    """Every scenario on every runtime; the figures by workload, then runtime."""
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
                    bench.idle(args.idle_seconds, release=release)
                    bench.top_up(args.restart_crs)
                    bench.restart()
            finally:
                bench.close()
            results[label] = {c.name: c.figures for c in bench.contenders}
    return results


def command(args: argparse.Namespace) -> str:
    """The run's arguments as the doc shows them: every figure-changing one, defaults too."""
    words = [
        f"--latency-runs {args.latency_runs}",
        f"--burst {args.burst}",
        f"--memcached-latency-runs {args.memcached_latency_runs}",
        f"--idle-seconds {args.idle_seconds:g}",
        f"--restart-crs {args.restart_crs}",
    ]
    words += [
        flag
        for flag, on in (("--no-cold", args.no_cold), ("--no-idle-release", args.no_idle_release))
        if on
    ]
    return " ".join(["python -m bench.compare", *words])


if __name__ == "__main__":
    sys.exit(main())
