"""``python -m bench.chaos`` (``make chaos``): the command line, and the benchmark's own cluster.

It parses the flags, starts a cluster of its own (the benchmark stops its API server and
etcd), runs the scenario (``bench/chaos/scenario.py``), prints its tables
(``bench/chaos/summary.py``) and exits 1 if a check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import devcluster
from bench import chaos, tables
from bench.chaos import injection, scenario, summary


def own_cluster() -> devcluster.Cluster:
    """A cluster of our own: its own data dir and kernel-chosen ports (as tests/conftest.py)."""
    devcluster.build(skip_overridden=True)
    cluster = devcluster.Cluster(
        devcluster.default_data_dir() / f"chaos-{os.getpid()}", prefer_default_ports=False
    )
    cluster.start(timeout=120)
    return cluster


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.chaos",
        description=(chaos.__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--crs", type=int, default=200, help="CRs under churn")
    parser.add_argument("--minutes", type=float, default=3.0, help="churn lasts at least this")
    parser.add_argument("--rate", type=float, default=0.5, help="spec writes per second")
    parser.add_argument(
        "--faults", default=",".join(injection.FAULTS), help="injected in this order"
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
    unknown = set(args.faults.split(",")) - set(injection.FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}; choose from {', '.join(injection.FAULTS)}")
    workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
    args.deadline = float("inf") if args.budget is None else time.time() + args.budget * 60
    cluster = own_cluster()
    ok = False
    try:
        outcome = scenario.run(args, cluster, workdir)
        print(summary.report(outcome))
        with contextlib.suppress(OSError):
            tables.dump(args.json, outcome.figures)
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
