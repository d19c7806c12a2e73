"""Chaos benchmark (``make chaos``): CRs under spec churn while the runner's world breaks.

    .venv/bin/python -m bench.chaos [--crs 200] [--minutes 3] [--rate 0.5]
        [--faults kill9,apiserver,etcd,freeze,handover,poison] [--budget MINUTES]
        [--json FILE] [--keep] [--control]

It starts its OWN embedded cluster (own data dir under ``.cluster/``, kernel-chosen
ports) because it stops the API server and etcd; the shared cluster is never
touched. Two ``playbook-operator run --leader-elect`` replicas
(``bench/chaos_replicas.py``), each behind its own ``testkit/relay.py`` relay,
reconcile ``--crs`` ``Chaos`` CRs with ``bench/roles/chaos``: the role mirrors
``spec.value`` (and the CR's uid) into a child ConfigMap and records the start and
end of every run in a file per CR (``bench/chaos_runs.py``).

Once every CR has converged, a churn thread patches a random CR's spec ``--rate``
times a second for at least ``--minutes``, while these faults are injected in turn
(each at least once), each followed by a wait until the work outstanding when it
ended has converged:

- ``kill9``: ``kill -9`` of the leader (the standby takes over after the lease
  duration; the killed replica is started again as a standby);
- ``apiserver``: kube-apiserver stopped for ``--outage`` seconds, then started;
- ``etcd``: etcd stopped for ``--outage`` seconds, then started;
- ``freeze``: the leader's relay SIGSTOPped for ``--freeze`` seconds (its
  connections stay open and silent: it must fence itself while the standby takes
  over), then thawed and its connections reset;
- ``handover``: SIGTERM to the leader: it releases the Lease and the standby leads;
- ``poison``: a CR nested too deep to decode (it stays): the informers must go on
  with the others, and its status should say why.

A replica that exits (killed, fenced: exit code 3, or failing to start) is started again, as a
Deployment would. Then churn stops and it checks:

- converged: every CR at its last spec with a truthful status (``Successful`` at
  ``observedGeneration == generation``, child ConfigMap with the spec's value and
  the CR's uid);
- truthful status: never a CR seen ``Successful`` at its current generation while
  its child did not hold that spec (``bench/chaos_state.py``);
- overlaps: no two runs of one CR ever ran at once (from the role's records);
- orphans: no process of a dead runner instance (ansible-playbook, launcher) is
  left ``--orphan-grace`` seconds after it died;
- memory: RSS of the runners and their launchers, idle, back within
  ``--rss-tolerance`` of the idle baseline taken before the chaos.

It prints the figures as tables (``--json FILE`` writes them) and exits 1 if a
check failed. ``--control`` runs the replicas without ``--leader-elect``: both
reconcile every CR, so the overlap check must fail (a test of the checks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import devcluster
from bench import chaos_faults, chaos_replicas, chaos_runs, chaos_state, common
from runner.kube import client as kube_client

MiB = 1024 * 1024
#: Exit codes a replica is expected to end with here: SIGKILL, SIGTERM (0), fenced (3).
EXPECTED_EXITS = (-9, 0, 3)


def watches(records: Path) -> str:
    """The one watch: the chaos role, told where to record its runs."""
    gvk, role = chaos_state.CHAOS, common.HERE / "roles" / "chaos"
    return (
        f"- version: {gvk.version}\n  group: {gvk.group}\n  kind: {gvk.kind}\n"
        f"  role: {role}\n  vars:\n    chaos_records: {records}\n"
    )


# -- the benchmark -----------------------------------------------------------------


@dataclass
class Outcome:
    figures: dict[str, Any]
    faults: list[chaos_faults.Fault]
    checks: dict[str, tuple[bool, str]]


def own_cluster() -> devcluster.Cluster:
    """A cluster of our own: its own data dir and kernel-chosen ports (as tests/conftest.py)."""
    devcluster.build(skip_overridden=True)
    cluster = devcluster.Cluster(
        devcluster.default_data_dir() / f"chaos-{os.getpid()}", prefer_default_ports=False
    )
    cluster.start(timeout=120)
    return cluster


def run(args: argparse.Namespace, cluster: devcluster.Cluster, workdir: Path) -> Outcome:
    client = chaos_state.client_for(cluster)
    workload = common.Workload(
        label="chaos",
        gvk=chaos_state.CHAOS,
        crd=chaos_state.crd(),
        roles_dir=common.HERE / "roles",
        role="chaos",
        spec={"value": 0},
        var_prefix="_chaos_playbook_operator_dev_chaos",
    )
    workload.install(client)
    namespace = common.create_namespace(client, "chaos")
    records_dir = workdir / "records"
    records_dir.mkdir()
    config = chaos_replicas.Config(
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
    records = chaos_runs.Records(records_dir).start()
    # Listing hundreds of CRs and ConfigMaps costs CPU on a small machine: less often then.
    interval = 0.5 if args.crs < 100 else 1.0
    observer = chaos_state.Observer(cluster, namespace, interval=interval).start()
    replicas = chaos_replicas.start_pair(
        config=config, apiserver_port=port, kubeconfig=cluster.kubeconfig
    )
    chaos = chaos_faults.Chaos(cluster=cluster, namespace=namespace, replicas=replicas, args=args)
    try:
        return _chaos(
            chaos=chaos, client=client, namespace=namespace, records=records, observer=observer
        )
    finally:
        chaos_replicas.close(replicas)
        observer.stop()
        records.stop()


def _chaos(
    *,
    chaos: chaos_faults.Chaos,
    client: kube_client.Client,
    namespace: str,
    records: chaos_runs.Records,
    observer: chaos_state.Observer,
) -> Outcome:
    args, replicas = chaos.args, chaos.replicas
    names = [f"cr-{index:03d}" for index in range(args.crs)]
    started = time.time()
    for name in names:
        client.create(chaos_state.CHAOS, chaos_state.obj(name, namespace), namespace=namespace)
    initial = observer.wait(dict.fromkeys(names, 1), timeout=chaos_faults.wait_limit(args))
    if initial is None:
        raise TimeoutError(f"the {args.crs} new CRs did not converge in {args.converge_timeout} s")
    print(f"created {args.crs} CRs: converged in {initial - started:.1f} s", file=sys.stderr)
    common.settle(records.count, quiet=3.0, timeout=60)
    baseline = sum(r.rss() for r in replicas)

    churn = chaos_state.Churn(
        chaos.cluster, namespace=namespace, names=names, rate=args.rate
    ).start()
    chaos_started = time.time()
    faults: list[chaos_faults.Fault] = []
    kinds = [k for k in args.faults.split(",") if k]
    try:
        while (
            len(faults) < len(kinds) or time.time() - chaos_started < args.minutes * 60
        ) and time.time() < args.deadline:
            kind = kinds[len(faults) % len(kinds)]
            faults.append(
                chaos_faults.inject(
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
    common.settle(records.count, quiet=3.0, timeout=120)
    end_rss = sum(r.rss() for r in replicas)
    objs, unconverged = _unconverged(observer, churn)

    chaos_replicas.close(replicas)  # graceful stops: their leftovers count too
    for replica in replicas:
        replica.wait_checks()
    records.stop()
    runs = records.runs()
    overlaps = chaos_runs.overlaps(runs)
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


def _unconverged(
    observer: chaos_state.Observer, churn: chaos_state.Churn
) -> tuple[int, dict[str, list[str]]]:
    """How many CRs there are, and why each one not at its last spec is not."""
    objs, children = observer.snapshot()
    found = {}
    for obj in objs:
        name = obj["metadata"]["name"]
        problems = chaos_state.problems(obj, children.get(f"{name}-chaos"))
        if int(obj["metadata"]["generation"]) < churn.generations.get(name, 1):
            problems.append("generation below the last write")
        if problems:
            found[name] = problems
    return len(objs), found


def report(outcome: Outcome) -> str:
    f = outcome.figures
    seconds = [s for s in (x.converge_seconds for x in outcome.faults) if s is not None]
    fault_rows = [
        [
            str(index),
            fault.kind,
            f"{raw['at']:.0f}",
            f"{fault.outage:.1f}",
            "-" if fault.converge_seconds is None else f"{fault.converge_seconds:.1f}",
            "-" if fault.leader_seconds is None else f"{fault.leader_seconds:.1f}",
            f"{fault.leader_before} → {fault.leader_after}",
            str(fault.runs_after - fault.runs_before),
            fault.note or "-",
        ]
        for index, (fault, raw) in enumerate(zip(outcome.faults, f["faults"], strict=True), 1)
    ]
    exits = ", ".join(f"{e['instance']}={e['code']}" for e in f["replica_exits"]) or "none"
    for e in f["replica_exits"]:
        if "log_tail" in e:
            print(
                f"{e['instance']} exited {e['code']}; last lines:\n{e['log_tail']}", file=sys.stderr
            )
    summary = [
        ["CRs / churn", f"{f['crs']} CRs, {f['churn_seconds']:.0f} s of churn"],
        ["spec writes", f"{f['patches_written']} ({f['patches_failed']} refused during faults)"],
        ["faults injected", str(f["faults_injected"])],
        ["runs", f"{f['runs']} ({f['runs_killed']} killed mid-run)"],
        ["first convergence", f"{f['initial_converge_seconds']:.1f} s"],
        ["time to converge after a fault", common.spread(seconds)],
        [
            "final convergence",
            "-" if f["final_converge_seconds"] is None else f"{f['final_converge_seconds']:.1f} s",
        ],
        ["CRs converged", f"{f['crs_converged']}/{f['crs']}"],
        ["untruthful statuses seen", str(f["untruthful_statuses"])],
        ["overlaps", f"{f['overlaps']} (+{f['overlaps_within_polling_gap']} within 0.2 s)"],
        ["orphans", str(f["orphans"])],
        ["replica exits (code)", exits],
        ["RSS idle", f"{f['rss_baseline_mib']:.0f} → {f['rss_end_mib']:.0f} MiB"],
    ]
    checks = [
        [name, "ok" if ok else "FAILED", detail.replace("\n", "<br>")]
        for name, (ok, detail) in outcome.checks.items()
    ]
    return "\n\n".join(
        [
            common.table(
                [
                    "#",
                    "fault",
                    "at (s)",
                    "outage (s)",
                    "converged after (s)",
                    "leading after (s)",
                    "leader",
                    "runs",
                    "note",
                ],
                fault_rows,
            ),
            common.table(["figure", "value"], summary),
            common.table(["check", "result", "detail"], checks),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--crs", type=int, default=200, help="CRs under churn")
    parser.add_argument("--minutes", type=float, default=3.0, help="churn lasts at least this")
    parser.add_argument("--rate", type=float, default=0.5, help="spec writes per second")
    parser.add_argument(
        "--faults", default=",".join(chaos_faults.FAULTS), help="injected in this order"
    )
    parser.add_argument("--gap", type=float, default=5.0, help="seconds of churn between faults")
    parser.add_argument(
        "--probes", type=int, default=5, help="CRs written when a fault ends (fresh work)"
    )
    parser.add_argument("--outage", type=float, default=3.0, help="seconds a component is down")
    parser.add_argument("--lease-duration", type=float, default=8.0, help="seconds")
    parser.add_argument("--renew-deadline", type=float, default=5.0, help="seconds")
    parser.add_argument(
        "--freeze",
        type=float,
        default=None,
        help="seconds the leader's relay is frozen; None: lease duration + 4",
    )
    parser.add_argument(
        "--converge-timeout", type=float, default=600.0, help="seconds, for each wait"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="minutes after which no fault is injected and waits end; the last "
        "convergence still gets up to 2 minutes, then the checks run",
    )
    parser.add_argument(
        "--orphan-grace", type=float, default=20.0, help="seconds a dead runner's processes get"
    )
    parser.add_argument("--rss-tolerance", type=float, default=0.3, help="fraction over baseline")
    parser.add_argument(
        "--control",
        action="store_true",
        help="a control run of the checks themselves: replicas without --leader-elect, "
        "so both reconcile every CR and the overlap check must fail",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's and runs' files")
    args = parser.parse_args()
    if args.freeze is None:
        args.freeze = args.lease_duration + 4
    unknown = set(args.faults.split(",")) - set(chaos_faults.FAULTS)
    if unknown:
        parser.error(
            f"unknown faults {sorted(unknown)}; choose from {', '.join(chaos_faults.FAULTS)}"
        )
    workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
    args.deadline = float("inf") if args.budget is None else time.time() + args.budget * 60
    cluster = own_cluster()
    ok = False
    try:
        outcome = run(args, cluster, workdir)
        print(report(outcome))
        with contextlib.suppress(OSError):
            common.dump(args.json, outcome.figures)
        ok = all(passed for passed, _ in outcome.checks.values())
    finally:
        cluster.stop()
        if ok and not args.keep:
            shutil.rmtree(cluster.data_dir, ignore_errors=True)
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept: {cluster.data_dir} (cluster logs), {workdir} (runs)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
