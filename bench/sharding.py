"""Sharding benchmark (``make bench-sharding``): reconciles per minute with 1 vs 3 replicas.

    .venv/bin/python -m bench.sharding [--objects 60] [--waves 2] [--replicas 1,3]
        [--json FILE]

The CPU-light one-task role (``bench/workloads.py``) reconciles ``--objects`` CRs in
one namespace. For each replica count, that many ``playbook-operator run
--sharded`` processes (2 workers each, their own metrics port and Lease) start,
agree on membership, and the CRs are created (the first wave); each further
wave changes every CR's spec. Per replica count it reports:

- reconciles per minute: CRs of a wave divided by the time from the wave's
  first write to its last CR Successful at the new generation (best wave);
- CPU seconds per reconcile: CPU of all the replicas' process trees over the
  waves (``bench/accounting.py``: /proc, children reaped inside the tree) divided
  by the Ansible runs they counted;
- how busy the whole machine was meanwhile, and each replica's share of the runs.

Then the projection: with one core per replica (each on its own node), a
replica runs at most ``60 / cpu_per_reconcile`` reconciles a minute, so N
replicas project to N times that, until the API server or the watch fan-out
(every replica watches every object) becomes the bound. On this 2-core machine
3 replicas cannot go beyond what 2 cores give: the measured gain is capped
there, and the projection says what more nodes buy.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import accounting, convergence, embedded, tables, workloads
from testkit.harness import OperatorProcess

WAVE_TIMEOUT = 900.0


def start_replicas(
    *, count: int, workdir: Path, kubeconfig: Path, namespace: str, watches: str
) -> list[OperatorProcess]:
    group = f"bench-{namespace}"[:40]
    replicas = []
    for index in range(count):
        name = f"replica-{index}"
        (workdir / name).mkdir(parents=True, exist_ok=True)
        process = OperatorProcess(
            workdir=(workdir / name),
            kubeconfig=kubeconfig,
            namespace=namespace,
            watches=watches,
            args=(
                "--sharded",
                f"--replica-id={name}",
                f"--shard-group={group}",
                f"--leader-election-namespace={namespace}",
                "--log-level=info",
            ),
            env={"ANSIBLE_GATHERING": "explicit"},
        )
        replicas.append(process)
    for process in replicas:
        process.start()
    deadline = time.monotonic() + 120
    while not all(int(p.metric("playbook_operator_shard_members")) == count for p in replicas):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} replicas did not agree on membership in 120 s")
        time.sleep(0.5)
    return replicas


def pid(process: OperatorProcess) -> int:
    proc = process._proc
    assert proc is not None, "not started"
    return proc.pid


def measure(
    *, count: int, objects: int, waves: int, cluster: Any, client: Any, workload: Any
) -> dict[str, Any]:
    namespace = embedded.create_namespace(client, f"bench-shards-{count}-{int(time.time())}")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-sharding-") as tmp:
            replicas = start_replicas(
                count=count,
                workdir=Path(tmp),
                kubeconfig=Path(cluster.kubeconfig),
                namespace=namespace,
                watches=workload.watches(),
            )
            try:
                return _waves(
                    replicas=replicas,
                    objects=objects,
                    waves=waves,
                    client=client,
                    workload=workload,
                    namespace=namespace,
                )
            finally:
                for process in replicas:
                    process.stop()
    finally:
        embedded.delete_namespaces(client, [namespace])


def _waves(
    *,
    replicas: list[OperatorProcess],
    objects: int,
    waves: int,
    client: Any,
    workload: Any,
    namespace: str,
) -> dict[str, Any]:
    names = [f"cr-{index:03d}" for index in range(objects)]
    watcher = convergence.Converged(client, workload.gvk, namespace)
    runs_before = sum(p.runs() for p in replicas)
    cpu_before = sum(accounting.cpu_seconds(pid(p)) for p in replicas)
    machine = accounting.machine_ticks()
    per_wave: list[float] = []
    for wave in range(1, waves + 1):
        started = time.monotonic()
        for name in names:
            if wave == 1:
                client.create(workload.gvk, workload.obj(name, namespace), namespace=namespace)
            else:
                client.patch(
                    workload.gvk, name=name, namespace=namespace, body={"spec": {"value": wave}}
                )
        finished = watcher.wait(names, generation=wave, timeout=WAVE_TIMEOUT)
        per_wave.append(finished - started)
    runs = convergence.settle(lambda: sum(p.runs() for p in replicas)) - runs_before
    cpu = sum(accounting.cpu_seconds(pid(p)) for p in replicas) - cpu_before
    busy = accounting.machine_busy(machine)
    shares = [p.runs() for p in replicas]
    best = min(per_wave)
    return {
        "replicas": len(replicas),
        "objects": objects,
        "wave_seconds": per_wave,
        "reconciles_per_minute": objects / best * 60,
        "runs": runs,
        "cpu_seconds": cpu,
        "cpu_per_reconcile": cpu / runs if runs else float("nan"),
        "machine_busy": busy,
        "runs_per_replica": shares,
    }


def report(results: list[dict[str, Any]], nodes: list[int]) -> str:
    rows = [
        [
            str(r["replicas"]),
            f"{r['reconciles_per_minute']:.0f}",
            tables.spread(r["wave_seconds"]),
            f"{r['cpu_per_reconcile']:.2f} s",
            f"{r['machine_busy'] * 100:.0f} %",
            "/".join(str(n) for n in r["runs_per_replica"]),
        ]
        for r in results
    ]
    out = [
        tables.table(
            [
                "replicas",
                "reconciles/min",
                "wave time",
                "CPU per reconcile",
                "machine busy",
                "runs per replica",
            ],
            rows,
        )
    ]
    base = results[0]
    for r in results[1:]:
        out.append(
            f"\n{r['replicas']} vs {base['replicas']} replica(s): "
            f"{tables.ratio(r['reconciles_per_minute'], base['reconciles_per_minute'])}x "
            "reconciles per minute on this machine's 2 cores"
        )
    cpu = max(r["cpu_per_reconcile"] for r in results)
    per_core = 60 / cpu
    out.append(
        f"\nProjection, one core per replica on its own node, at {cpu:.2f} CPU-s per "
        f"reconcile (the highest measured): {per_core:.0f} reconciles/min per replica"
    )
    out.append(
        tables.table(
            ["nodes (replicas)", "projected reconciles/min"],
            [[str(n), f"{n * per_core:.0f}"] for n in nodes],
        )
    )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=60)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--replicas", default="1,3", help="replica counts, comma-separated")
    parser.add_argument("--project", default="1,3,5,10", help="node counts for the projection")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    cluster, client = embedded.connect()
    workload = workloads.one_task()
    workload.install(client)
    results = []
    for count in (int(c) for c in args.replicas.split(",")):
        print(f"measuring {count} replica(s)...", file=sys.stderr, flush=True)
        results.append(
            measure(
                count=count,
                objects=args.objects,
                waves=args.waves,
                cluster=cluster,
                client=client,
                workload=workload,
            )
        )
    nodes = [int(n) for n in args.project.split(",")]
    print(report(results, nodes))
    with contextlib.suppress(OSError):
        tables.dump(args.json, {"results": results, "projection_nodes": nodes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
