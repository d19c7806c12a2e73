"""Reconcile benchmark (``make bench``): cold and warm Ansible side by side, and the floor.

    .venv/bin/python -m bench.reconcile [--workloads one-task,memcached] [--latency-runs 8]
        [--memcached-latency-runs 6] [--burst 50] [--memcached-burst 20] [--floor-runs 5]
        [--json FILE]

For each workload (``bench/workloads.py``: the one-task role, the 50-task role
(``--workloads fifty-tasks``, not run by default) and ``roles/memcached``),
two runners run at once, each in its own namespace with 2 workers: one with
``--warm=false`` (every ansible-playbook and module started cold) and one with
``--warm=true`` (forked from pre-imported launchers). After warm-up runs (the
launchers start in the background: the first run after start is cold), it measures:

- floor: the same role run by plain ``ansible-playbook`` on a new CR (no runner);
- CR → Successful: one new CR at a time, alternating cold and warm (median, range);
- CPU seconds of the runner's process tree per Ansible run, over those CRs
  (``bench/accounting.py`` says how: /proc, children reaped inside the tree);
- runs per new CR: Ansible runs (the runner's run-duration histogram count) once
  the runners are quiet again, divided by the new CRs;
- RSS of runner + launchers, idle after the work above (2 workers), and its peak
  during the burst;
- N CRs created at once → all Successful, cold then warm, with CPU per run.

For the one-task role it also times the task's own API calls (a new TLS
connection, GET and POST of the ConfigMap) to show what warm adds above them.
Timings come from a harness-side watch (monotonic clock). The machine is noisy:
compare ratios from one run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import accounting, convergence, embedded, runtimes, tables, workloads
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors

MODES = ("cold", "warm")
#: Seconds to wait for a Memcached's pods to be reported Running (they may stay Pending
#: while the shared cluster's node is full).
READY_TIMEOUT = 120.0
MiB = 1024 * 1024


def floor(
    workload: workloads.Workload,
    *,
    client: kube_client.Client,
    kubeconfig: Path,
    namespace: str,
    runs: int,
    workdir: Path,
) -> dict[str, list[float]]:
    """Plain ansible-playbook on a new CR each time: wall and CPU seconds (first run untimed)."""
    playbook = workdir / f"floor-{workload.label}.yml"
    playbook.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n"
        f"  roles:\n    - {workload.role}\n"
    )
    collections = workloads.ROOT / "runner" / "collection"
    env = {
        **os.environ,
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_ROLES_PATH": str(workload.roles_dir),
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "PLAYBOOK_OPERATOR_LIB": str(workloads.ROOT),
    }
    ansible_playbook = str(Path(sys.executable).parent / "ansible-playbook")
    wall, cpu = [], []
    for index in range(runs + 1):
        obj = client.create(
            workload.gvk, workload.obj(f"floor-{index}", namespace), namespace=namespace
        )
        argv = [ansible_playbook, "-i", "localhost,", "-c", "local", str(playbook)]
        argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
        argv += ["-e", json.dumps(workload.extra_vars(obj))]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run(argv, env=env, check=False, capture_output=True, text=True)
        took = time.monotonic() - started
        if done.returncode:
            raise RuntimeError(f"floor run failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if index:  # the first run fills .pyc files and kubernetes.core's discovery cache
            wall.append(took)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu}


def api_calls(kubeconfig: Path, namespace: str, runs: int) -> list[float]:
    """The one-task role's own API work: a new connection, GET (404) and POST of a ConfigMap."""
    times = []
    for index in range(runs):
        client = kube_client.Client(kube_config.from_kubeconfig(str(kubeconfig)))
        body = {"metadata": {"name": f"api-{index}", "namespace": namespace}, "data": {"v": "0"}}
        started = time.monotonic()
        with contextlib.suppress(kube_errors.NotFoundError):
            client.get(embedded.CONFIGMAP, name=f"api-{index}", namespace=namespace)
        client.create(embedded.CONFIGMAP, body, namespace=namespace)
        times.append(time.monotonic() - started)
    return times


def measure(
    workload: workloads.Workload,
    *,
    client: kube_client.Client,
    kubeconfig: Path,
    workdir: Path,
    latency_runs: int,
    burst: int,
    floor_runs: int,
) -> dict[str, Any]:
    tag = f"bench-{os.getpid()}-{workload.label}"
    namespaces = {k: embedded.create_namespace(client, f"{tag}-{k}") for k in ("floor", *MODES)}
    figures: dict[str, Any] = {}
    try:
        if floor_runs:
            print(f"[{workload.label}] floor: plain ansible-playbook x{floor_runs}", flush=True)
            figures["floor"] = floor(
                workload,
                client=client,
                kubeconfig=kubeconfig,
                namespace=namespaces["floor"],
                runs=floor_runs,
                workdir=workdir,
            )
            if workload.label == "one-task":
                figures["api_calls_s"] = api_calls(kubeconfig, namespaces["floor"], latency_runs)
        figures.update(
            _runners(
                workload,
                client=client,
                kubeconfig=kubeconfig,
                workdir=workdir,
                namespaces=namespaces,
                latency_runs=latency_runs,
                burst=burst,
            )
        )
    finally:
        embedded.delete_namespaces(client, namespaces.values())
    return figures


def _runners(
    workload: workloads.Workload,
    *,
    client: kube_client.Client,
    kubeconfig: Path,
    workdir: Path,
    namespaces: dict[str, str],
    latency_runs: int,
    burst: int,
) -> dict[str, Any]:
    label = workload.label
    ours = {
        mode: runtimes.Ours(
            warm=mode == "warm",
            workdir=workdir / f"{label}-{mode}",
            kubeconfig=kubeconfig,
            namespace=namespaces[mode],
            watches=workload.watches(),
        )
        for mode in MODES
    }
    watchers = {
        mode: convergence.Converged(client, workload.gvk, namespaces[mode]) for mode in MODES
    }
    ready = workload.ready
    readiness = {
        mode: convergence.Converged(client, workload.gvk, namespaces[mode], done=ready)
        for mode in MODES
        if ready is not None
    }
    figures: dict[str, dict[str, Any]] = {mode: {} for mode in MODES}

    def create(mode: str, name: str) -> float:
        namespace = namespaces[mode]
        started = time.monotonic()
        client.create(workload.gvk, workload.obj(name, namespace), namespace=namespace)
        return started

    def reconcile_one(mode: str, index: int) -> None:
        name = f"warm-up-{index}"
        create(mode, name)
        watchers[mode].wait([name])

    try:
        for mode in MODES:
            ours[mode].start()
        for mode in MODES:
            print(f"[{label}] warm-up: {mode}", flush=True)
            figures[mode]["warm_up_runs"] = ours[mode].warm_up(
                functools.partial(reconcile_one, mode)
            )
            convergence.settle(ours[mode].runs)

        print(f"[{label}] CR → Successful x{latency_runs}, interleaved", flush=True)
        before = {m: (runtimes.cpu(ours[m]), ours[m].runs()) for m in MODES}
        requeued = {m: ours[m].requeued() for m in MODES}
        triggers = {m: ours[m].triggers() for m in MODES}
        parts_before = {m: ours[m].cpu_parts() for m in MODES}
        latencies: dict[str, list[float]] = {m: [] for m in MODES}
        ready_latencies: dict[str, list[float]] = {m: [] for m in MODES}
        for index in range(latency_runs):
            for mode in MODES if index % 2 == 0 else MODES[::-1]:
                name = f"latency-{index}"
                started = create(mode, name)
                latencies[mode].append(watchers[mode].wait([name]) - started)
                if readiness:
                    # pods need room on the cluster's node: give up on this figure, not the run
                    with contextlib.suppress(TimeoutError):
                        took = readiness[mode].wait([name], timeout=READY_TIMEOUT) - started
                        ready_latencies[mode].append(took)
        for mode in MODES:
            runs = convergence.settle(ours[mode].runs) - before[mode][1]
            cpu = runtimes.cpu(ours[mode]) - before[mode][0]
            parts = ours[mode].cpu_parts()
            figures[mode].update(
                cpu_parts_per_run_s={
                    k: (v - parts_before[mode][k]) / max(runs, 1) for k, v in parts.items()
                },
                latency_s=latencies[mode],
                ready_latency_s=ready_latencies[mode],
                latency_runs=runs,
                runs_per_new_cr=runs / latency_runs,
                requeued_per_new_cr=(ours[mode].requeued() - requeued[mode]) / latency_runs,
                own_events_per_new_cr=(ours[mode].triggers()[0] - triggers[mode][0]) / latency_runs,
                child_events_per_new_cr=(ours[mode].triggers()[1] - triggers[mode][1])
                / latency_runs,
                cpu_per_run_s=cpu / max(runs, 1),
                rss_steady_bytes=ours[mode].rss(),
                launchers=len(ours[mode].launchers()),
                tree_rss_steady_bytes=runtimes.tree_rss(ours[mode]),
            )

        for mode in MODES:
            print(f"[{label}] {burst} CRs at once: {mode}", flush=True)
            names = [f"burst-{i}" for i in range(burst)]
            cpu0, runs0 = runtimes.cpu(ours[mode]), ours[mode].runs()
            runtime = ours[mode]
            with (
                accounting.PeakSampler(runtime.rss) as peak,
                accounting.PeakSampler(functools.partial(runtimes.tree_rss, runtime)) as tree_peak,
            ):
                started, ticks = time.monotonic(), accounting.machine_ticks()
                for name in names:
                    create(mode, name)
                took = watchers[mode].wait(names) - started
                busy = accounting.machine_busy(ticks)
                cores = (runtimes.cpu(runtime) - cpu0) / took
            runs = convergence.settle(runtime.runs) - runs0
            figures[mode].update(
                burst_s=took,
                burst_runtime_cores=cores,
                burst_machine_busy=busy,
                burst_runs=runs,
                burst_cpu_per_run_s=(runtimes.cpu(runtime) - cpu0) / max(runs, 1),
                rss_peak_bytes=peak.peak,
                tree_rss_peak_bytes=tree_peak.peak,
                rss_after_burst_bytes=runtime.rss(),
            )
    finally:
        for runtime in ours.values():
            runtime.stop()
    return figures


def report(results: dict[str, dict[str, Any]], burst: dict[str, int]) -> str:
    rows: list[list[str]] = []
    for label, fig in results.items():
        cold, warm = fig.get("cold", {}), fig.get("warm", {})
        floor_fig = fig.get("floor", {})
        lat = {m: tables.median(fig[m]["latency_s"]) for m in MODES if m in fig}
        rows.append(
            [
                f"{label}: CR → Successful",
                tables.spread(floor_fig.get("wall_s", [])),
                tables.spread(cold.get("latency_s", [])),
                tables.spread(warm.get("latency_s", [])),
                tables.ratio(lat.get("warm"), lat.get("cold")),
            ]
        )
        if cold.get("ready_latency_s"):
            ready = {m: tables.median(fig[m]["ready_latency_s"]) for m in MODES if m in fig}
            rows.append(
                [
                    f"{label}: CR → its pods Running, reported in status",
                    "",
                    tables.spread(cold["ready_latency_s"]),
                    tables.spread(warm.get("ready_latency_s", [])),
                    tables.ratio(ready.get("warm"), ready.get("cold")),
                ]
            )
        if "api_calls_s" in fig:
            api = tables.median(fig["api_calls_s"])
            rows.append(
                [
                    f"{label}: the task's own API calls / warm above them",
                    f"{api:.3f} s",
                    f"+{lat['cold'] - api:.2f} s",
                    f"+{lat['warm'] - api:.2f} s",
                    "",
                ]
            )
        rows.append(
            [
                f"{label}: {burst[label]} CRs at once → all Successful",
                "",
                f"{cold.get('burst_s', 0):.1f} s",
                f"{warm.get('burst_s', 0):.1f} s",
                tables.ratio(warm.get("burst_s"), cold.get("burst_s")),
            ]
        )
        rows.append(
            [
                f"{label}: in that burst, cores the runner's tree used / machine busy",
                "",
                f"{cold.get('burst_runtime_cores', 0):.2f} / "
                f"{100 * cold.get('burst_machine_busy', 0):.0f} %",
                f"{warm.get('burst_runtime_cores', 0):.2f} / "
                f"{100 * warm.get('burst_machine_busy', 0):.0f} %",
                "",
            ]
        )
        for key, what in (("cpu_per_run_s", "one at a time"), ("burst_cpu_per_run_s", "burst")):
            rows.append(
                [
                    f"{label}: CPU-s per reconcile ({what})",
                    f"{tables.median(floor_fig.get('cpu_s', [])):.2f}" if floor_fig else "",
                    f"{cold.get(key, 0):.2f}",
                    f"{warm.get(key, 0):.2f}",
                    tables.ratio(warm.get(key), cold.get(key)),
                ]
            )
        if "cpu_parts_per_run_s" in warm:
            parts = warm["cpu_parts_per_run_s"]
            rows.append(
                [
                    f"{label}: warm CPU-s per reconcile, where",
                    "",
                    "",
                    f"ansible-playbook and its workers {parts['playbook']:.2f}, "
                    f"modules {parts['modules']:.2f}, runner {parts['runner']:.2f}, "
                    f"launchers {parts['launchers']:.2f}",
                    "",
                ]
            )
        rows.append(
            [
                f"{label}: runs per new CR (of them asked for by the role: requeue_after)",
                "",
                f"{cold.get('runs_per_new_cr', 0):.2f} ({cold.get('requeued_per_new_cr', 0):.2f})",
                f"{warm.get('runs_per_new_cr', 0):.2f} ({warm.get('requeued_per_new_cr', 0):.2f})",
                "",
            ]
        )
        rows.append(
            [
                f"{label}: watch events per new CR that asked for a run: the CR's / its children's",
                "",
                f"{cold.get('own_events_per_new_cr', 0):.2f} / "
                f"{cold.get('child_events_per_new_cr', 0):.2f}",
                f"{warm.get('own_events_per_new_cr', 0):.2f} / "
                f"{warm.get('child_events_per_new_cr', 0):.2f}",
                "",
            ]
        )
        for key, what in (
            ("rss_steady_bytes", "runner + launchers, idle after work"),
            ("rss_peak_bytes", "runner + launchers, peak in the burst"),
            ("tree_rss_peak_bytes", "whole tree, peak in the burst"),
        ):
            rows.append(
                [
                    f"{label}: RSS {what}",
                    "",
                    f"{cold.get(key, 0) / MiB:.0f} MiB",
                    f"{warm.get(key, 0) / MiB:.0f} MiB",
                    tables.ratio(warm.get(key), cold.get(key)),
                ]
            )
    return tables.table(["figure", "floor (ansible-playbook)", "cold", "warm", "warm/cold"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", default="one-task,memcached")
    parser.add_argument("--latency-runs", type=int, default=8)
    parser.add_argument("--memcached-latency-runs", type=int, default=6)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--memcached-burst", type=int, default=20)
    parser.add_argument("--floor-runs", type=int, default=5, help="0 skips the floor")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()

    started = time.monotonic()
    cluster, client = embedded.connect()
    results: dict[str, dict[str, Any]] = {}
    bursts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for label in args.workloads.split(","):
            if label in ("one-task", "fifty-tasks"):
                workload = workloads.one_task() if label == "one-task" else workloads.fifty_tasks()
                runs, burst = args.latency_runs, args.burst
            elif label == "memcached":
                workload = workloads.memcached(Path(tmp))
                runs, burst = args.memcached_latency_runs, args.memcached_burst
            else:
                parser.error(f"unknown workload {label!r} (one-task, fifty-tasks, memcached)")
            workload.install(client)
            if workload.ready is not None:
                needed = 2 * (burst + runs) + 6  # a pod per CR of both modes, warm-ups
                free = embedded.free_pod_slots(client)
                if free < needed:
                    print(
                        f"warning: the cluster's nodes have room for {free} more pods, "
                        f"{label} needs about {needed}: CRs will wait for Pending pods",
                        flush=True,
                    )
            bursts[label] = burst
            results[label] = measure(
                workload,
                client=client,
                kubeconfig=cluster.kubeconfig,
                workdir=Path(tmp),
                latency_runs=runs,
                burst=burst,
                floor_runs=args.floor_runs,
            )
    tables.dump(args.json, results)
    print()
    print(report(results, bursts))
    print(f"\n(total {time.monotonic() - started:.0f} s; load average {os.getloadavg()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
