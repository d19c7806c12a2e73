"""The chaos benchmark's run: the CRs created, churn and faults in turn, then the checks.

Part of ``make chaos`` (``bench/chaos/__init__.py`` says what it checks). :func:`run`
starts the two replicas (``runners``), the observer and the churn (``state``) and the
records' poller (``history``) on the benchmark's own cluster, injects each fault
(``injection``), and returns the figures and the checks' verdicts as an :class:`Outcome`.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import devcluster
from bench import convergence, embedded, workloads
from bench.chaos import history, injection, runners, state
from runner.kube import client as kube_client

MiB = 1024 * 1024
#: Exit codes a replica is expected to end with here: SIGKILL, SIGTERM (0), fenced (3).
EXPECTED_EXITS = (-9, 0, 3)


def watches(records: Path) -> str:
    """The one watch: the chaos role, told where to record its runs."""
    gvk, role = state.CHAOS, workloads.HERE / "roles" / "chaos"
    return (
        f"- version: {gvk.version}\n  group: {gvk.group}\n  kind: {gvk.kind}\n"
        f"  role: {role}\n  vars:\n    chaos_records: {records}\n"
    )


@dataclass
class Outcome:
    figures: dict[str, Any]
    faults: list[injection.Fault]
    checks: dict[str, tuple[bool, str]]


def run(args: argparse.Namespace, cluster: devcluster.Cluster, workdir: Path) -> Outcome:
    client = state.client_for(cluster)
    workload = workloads.Workload(
        label="chaos",
        gvk=state.CHAOS,
        crd=state.crd(),
        roles_dir=workloads.HERE / "roles",
        role="chaos",
        spec={"value": 0},
        var_prefix="_chaos_playbook_operator_dev_chaos",
    )
    workload.install(client)
    namespace = embedded.create_namespace(client, "chaos")
    records_dir = workdir / "records"
    records_dir.mkdir()
    config = runners.Config(
        workdir=workdir,
        namespace=namespace,
        watches=watches(records_dir),
        args=(
            *(() if args.control else ("--leader-elect",)),
            "--leader-election-id=chaos",
            f"--leader-election-namespace={namespace}",
            f"--lease-duration={args.lease_duration}s",
            f"--renew-deadline={args.renew_deadline}s",
            "--log-level=info",
        ),
        orphan_grace=args.orphan_grace,
        env={"ANSIBLE_GATHERING": "explicit"},
        elect=not args.control,
    )
    port = int(urllib.parse.urlsplit(cluster.server).port or 443)
    records = history.Records(records_dir).start()
    # Listing hundreds of CRs and ConfigMaps costs CPU on a small machine: less often then.
    interval = 0.5 if args.crs < 100 else 1.0
    observer = state.Observer(cluster, namespace, interval=interval).start()
    replicas = runners.start_pair(config=config, apiserver_port=port, kubeconfig=cluster.kubeconfig)
    chaos = injection.Chaos(cluster=cluster, namespace=namespace, replicas=replicas, args=args)
    try:
        return _chaos(
            chaos=chaos, client=client, namespace=namespace, records=records, observer=observer
        )
    finally:
        runners.close(replicas)
        observer.stop()
        records.stop()


def _chaos(
    *,
    chaos: injection.Chaos,
    client: kube_client.Client,
    namespace: str,
    records: history.Records,
    observer: state.Observer,
) -> Outcome:
    args, replicas = chaos.args, chaos.replicas
    names = [f"cr-{index:03d}" for index in range(args.crs)]
    started = time.time()
    for name in names:
        client.create(state.CHAOS, state.obj(name, namespace), namespace=namespace)
    initial = observer.wait(dict.fromkeys(names, 1), timeout=injection.wait_limit(args))
    if initial is None:
        raise TimeoutError(f"the {args.crs} new CRs did not converge in {args.converge_timeout} s")
    print(f"created {args.crs} CRs: converged in {initial - started:.1f} s", file=sys.stderr)
    convergence.settle(records.count, quiet=3.0, timeout=60)
    baseline = sum(r.rss() for r in replicas)

    churn = state.Churn(chaos.cluster, namespace=namespace, names=names, rate=args.rate).start()
    chaos_started = time.time()
    faults: list[injection.Fault] = []
    kinds = [k for k in args.faults.split(",") if k]
    try:
        while (
            len(faults) < len(kinds) or time.time() - chaos_started < args.minutes * 60
        ) and time.time() < args.deadline:
            kind = kinds[len(faults) % len(kinds)]
            faults.append(
                injection.inject(
                    chaos=chaos, kind=kind, churn=churn, observer=observer, records=records
                )
            )
            time.sleep(args.gap)  # churn alone between two faults
    finally:
        churn.stop()
    stopped = time.time()
    # Past --budget the last convergence still gets up to 2 minutes: the checks need it.
    limit = min(args.converge_timeout, max(args.deadline - time.time(), 120.0))
    final = observer.wait(churn.targets(), timeout=limit)
    convergence.settle(records.count, quiet=3.0, timeout=120)
    end_rss = sum(r.rss() for r in replicas)
    objs, unconverged = _unconverged(observer, churn)

    runners.close(replicas)  # graceful stops: their leftovers count too
    for replica in replicas:
        replica.wait_checks()
    records.stop()
    runs = records.runs()
    overlaps = history.overlaps(runs)
    certain = [o for o in overlaps if o.certain]
    orphans = [o for r in replicas for o in r.orphans]
    tolerance = baseline * (1 + args.rss_tolerance)
    checks = {
        "converged": (
            not unconverged,
            f"{objs - len(unconverged)}/{objs} CRs at their last spec"
            + "".join(f"\n    {n}: {'; '.join(p)}" for n, p in sorted(unconverged.items())[:10]),
        ),
        "truthful status": (
            not observer.lies,
            f"{len(observer.lies)} statuses seen claiming a spec their child did not hold"
            + "".join(f"\n    {n}: {w}" for (n, _), w in sorted(observer.lies.items())[:10]),
        ),
        "no overlap": (
            not certain,
            f"{len(certain)} overlapping pairs, {len(overlaps) - len(certain)} within the "
            "polling gap" + "".join(f"\n    {o.describe()}" for o in overlaps[:10]),
        ),
        "no orphan": (
            not orphans,
            f"{len(orphans)} processes of dead instances"
            + "".join(f"\n    {o.instance}: pid {o.pid} {o.command}" for o in orphans[:10]),
        ),
        "memory": (
            end_rss <= tolerance,
            f"RSS {end_rss / MiB:.0f} MiB at the end, baseline {baseline / MiB:.0f} MiB "
            f"(tolerance +{args.rss_tolerance * 100:.0f} %: {tolerance / MiB:.0f} MiB)",
        ),
    }
    figures = {
        "crs": args.crs,
        "churn_seconds": stopped - chaos_started,
        "patches_written": churn.written,
        "patches_failed": churn.failed,
        "initial_converge_seconds": initial - started,
        "final_converge_seconds": None if final is None else max(0.0, final - stopped),
        "faults_injected": len(faults),
        "runs": len(runs),
        "runs_killed": sum(1 for r in runs if r.killed),
        "crs_converged": objs - len(unconverged),
        "untruthful_statuses": len(observer.lies),
        "overlaps": len(certain),
        "overlaps_within_polling_gap": len(overlaps) - len(certain),
        "orphans": len(orphans),
        "replica_exits": [
            {"instance": e.instance, "code": e.code}
            | ({} if e.code in EXPECTED_EXITS else {"log_tail": e.tail})
            for e in (e for r in replicas for e in r.exits)
        ],
        "rss_baseline_mib": baseline / MiB,
        "rss_end_mib": end_rss / MiB,
        "observer_errors": observer.errors,
        "faults": [
            {
                "kind": f.kind,
                "at": f.at - chaos_started,
                "outage_seconds": f.outage,
                "converge_seconds": f.converge_seconds,
                "leader_seconds": f.leader_seconds,
                "leader_before": f.leader_before,
                "leader_after": f.leader_after,
                "runs": f.runs_after - f.runs_before,
                "note": f.note,
            }
            for f in faults
        ],
        "checks": {name: {"ok": ok, "detail": detail} for name, (ok, detail) in checks.items()},
    }
    return Outcome(figures=figures, faults=faults, checks=checks)


def _unconverged(observer: state.Observer, churn: state.Churn) -> tuple[int, dict[str, list[str]]]:
    """How many CRs there are, and why each one not at its last spec is not."""
    objs, children = observer.snapshot()
    found = {}
    for obj in objs:
        name = obj["metadata"]["name"]
        problems = state.problems(obj, children.get(f"{name}-chaos"))
        if int(obj["metadata"]["generation"]) < churn.generations.get(name, 1):
            problems.append("generation below the last write")
        if problems:
            found[name] = problems
    return len(objs), found
