"""A restart without a storm: what restarting the runner costs with many settled CRs.

    .venv/bin/python -m bench.restart_storm [--count 200] [--window 120] [--json FILE]

On the embedded cluster, ``--count`` Memcacheds of one pod (``bench/workloads.py``'s private
group, pods on a kwok pool of their own: ``testkit/pool.py``) are created and left to
settle under one runner. That runner is stopped, then a new one (a fresh runner dir, as
after a pod restart) is started twice in a row, each time until quiet:

- ``window 0``: ``--startup-resync-window=0``, every CR run at once (ansible-operator);
- ``window W``: ``--startup-resync-window=W``, unchanged CRs spread over the window.

For each start: CPU-seconds of the runner's process tree (runner, launchers, Ansible) in
the first ``--first`` seconds and until quiet, Ansible runs, the time until quiet (when
the run counter last moved, sampled every second from the start, so a drain that ends
inside the first ``--first`` seconds is timed too; quiet means no run for 10 s, after the
window), the run counter every 30 s (``runs_timeline``), and the latency of two CRs
touched right after the runner is ready: a new one and one whose spec changed, each
until Successful at its generation.
The full figure is 1000 CRs; 200 is the default so that it fits a shared 2-core machine.

``--hold FILE`` pauses after the settle until FILE exists; if it names a directory, the
two restarted runners import the runtime from there (``PYTHONPATH``). Settling 1000 CRs
takes this machine about half an hour, so it can run while other work does, and the two
restarts, which are what is measured, on a quiet machine and on another build.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import devcluster
from bench import accounting, convergence, embedded, memcached_scale, tables, workloads
from runner.kube import client as kube_client
from testkit import pool
from testkit.harness import OperatorProcess

QUIET = 10.0  # seconds without a run that count as quiet


def runner(
    *, cluster: devcluster.Cluster, workdir: Path, namespace: str, watches: str, env: dict[str, str]
) -> OperatorProcess:
    workdir.mkdir()
    return OperatorProcess(
        workdir=workdir,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=watches,
        args=("--log-level=info",),
        env=env,
    )


class LastRun(accounting.Sampling):
    """Samples a runner's run counter every second: when it last moved, and a timeline.

    Before, the time until quiet was only looked for after ``--first`` seconds, so a
    drain that ended inside them read as ``--first`` (both starts read 600 s).
    """

    def __init__(self, runs: Callable[[], int], *, began: float, every: float = 30.0) -> None:
        super().__init__(interval=1.0)
        self._runs = runs
        self._began = began
        self._every = every
        self.count = -1
        self.moved_at = began
        self.timeline: list[tuple[float, int]] = []

    def sample(self) -> None:
        try:
            count = self._runs()
        except (OSError, AssertionError, ValueError):  # not serving yet, or gone
            return
        now = time.monotonic()
        if count != self.count:
            if self.count >= 0:
                self.moved_at = now
            self.count = count
        at = round(now - self._began, 1)
        if not self.timeline or at - self.timeline[-1][0] >= self._every:
            self.timeline.append((at, count))


def latency(
    client: kube_client.Client,
    workload: workloads.Workload,
    namespace: str,
    name: str,
    since: float,
) -> float:
    """Seconds from ``since`` until ``name`` is Successful at its generation."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        obj = client.get(workload.gvk, name=name, namespace=namespace)
        if convergence.at_generation(obj) and workloads.pods_reported(obj):
            return round(time.monotonic() - since, 1)
        time.sleep(0.5)
    raise TimeoutError(f"{name} not converged within 900 s")


def touch(
    client: kube_client.Client, workload: workloads.Workload, namespace: str, node: str, label: str
) -> None:
    """A new CR and a changed one, right after ready: they must not wait behind the rest."""
    new = workload.obj(
        f"new-{label}", namespace, size=1, version=memcached_scale.OLD, **pool.placement(node)
    )
    client.create(workload.gvk, new, namespace=namespace)
    body = {"spec": {"size": 2 if label == "w0" else 1}}
    client.patch(workload.gvk, name="memcached-0000", namespace=namespace, body=body)


def restart(
    operator: OperatorProcess,
    *,
    client: kube_client.Client,
    workload: workloads.Workload,
    namespace: str,
    node: str,
    label: str,
    first: float,
    window: float,
) -> dict[str, Any]:
    """One restarted runner from its start until quiet: CPU, runs, two CRs' latencies."""
    operator.command.append(f"--startup-resync-window={window:g}s")
    began = time.monotonic()
    operator.start()
    ready = time.monotonic()
    pid = memcached_scale.operator_pid(operator)
    with LastRun(operator.runs, began=began) as watch:
        touch(client, workload, namespace, node, label)
        new_s = latency(client, workload, namespace, f"new-{label}", ready)
        changed_s = latency(client, workload, namespace, "memcached-0000", ready)
        remaining = first - (time.monotonic() - began)
        if remaining > 0:
            time.sleep(remaining)  # the first seconds' CPU is the figure: wait them out
        cpu_first = accounting.cpu_seconds(pid)
        runs_first = operator.runs()
        convergence.settle(operator.runs, quiet=QUIET, timeout=window + 1800)
    return {
        "window_s": window,
        "ready_s": round(ready - began, 1),
        f"cpu_s_first_{first:g}s": round(cpu_first, 1),
        f"runs_first_{first:g}s": runs_first,
        "cpu_s_until_quiet": round(accounting.cpu_seconds(pid), 1),
        "runs_until_quiet": operator.runs(),
        "quiet_after_s": round(watch.moved_at - began, 1),
        "runs_timeline": watch.timeline,
        "new_cr_latency_s": new_s,
        "changed_cr_latency_s": changed_s,
    }


def hold(path: Path) -> Path | None:
    """Wait until ``path`` exists; the directory it names, if any, holds the runtime to run."""
    print(f"settled; waiting for {path}", flush=True)
    while not path.exists():
        time.sleep(5)
    named = path.read_text().strip()
    return Path(named).resolve() if named else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="Memcached CRs (default 200)")
    parser.add_argument("--window", type=float, default=120, help="seconds (default 120)")
    parser.add_argument("--first", type=float, default=60, help="CPU measured in these seconds")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--hold", type=Path, help="after the settle, wait for this file")
    args = parser.parse_args(argv)

    cluster, admin = embedded.connect()
    client = embedded.patient(admin)  # make test may restart the API server meanwhile
    namespace = embedded.create_namespace(client, f"bench-{int(time.time()) % 100000}-restart")
    figures: dict[str, Any] = {"count": args.count}
    with (
        embedded.service_room(client),
        tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp,
        pool.node_pool(cluster, client, workdir=Path(tmp), cidr="10.249.0.0/16") as node,
    ):
        workdir = Path(tmp)
        workload = workloads.memcached(workdir)
        memcached_scale.install(client, workload)
        watches = memcached_scale.watches(workload)
        env = {"ANSIBLE_ROLES_PATH": str(workload.roles_dir), "ANSIBLE_GATHERING": "explicit"}
        names = [f"memcached-{i:04d}" for i in range(args.count)]
        operators: list[OperatorProcess] = []
        try:
            settler = runner(
                cluster=cluster,
                workdir=workdir / "settle",
                namespace=namespace,
                watches=watches,
                env=env,
            )
            operators.append(settler)
            settler.start()
            started = time.monotonic()
            for name in names:
                obj = workload.obj(
                    name, namespace, size=1, version=memcached_scale.OLD, **pool.placement(node)
                )
                client.create(workload.gvk, obj, namespace=namespace)
            memcached_scale.wait_all(
                client,
                workload,
                namespace,
                lambda obj: convergence.at_generation(obj) and workloads.pods_reported(obj),
                count=args.count,
                timeout=3600,
            )
            convergence.settle(settler.runs, quiet=QUIET, timeout=1800)
            figures["settle_s"] = round(time.monotonic() - started, 1)
            figures["settle_runs"] = settler.runs()
            items = client.list(workload.gvk, namespace=namespace)["items"]
            figures["recorded"] = sum(
                1 for obj in items if (obj.get("status") or {}).get("reconciledChildren")
            )
            settler.stop()
            print(figures, flush=True)
            restart_env = dict(env)
            if args.hold is not None:
                code = hold(args.hold)
                if code is not None:
                    restart_env["PYTHONPATH"] = str(code)
                    figures["restart_code"] = str(code)
            for label, window in (("w0", 0.0), ("w", args.window)):
                operator = runner(
                    cluster=cluster,
                    workdir=workdir / f"restart-{label}",
                    namespace=namespace,
                    watches=watches,
                    env=restart_env,
                )
                operators.append(operator)
                figures[f"restart_window_{window:g}s"] = restart(
                    operator,
                    client=client,
                    workload=workload,
                    namespace=namespace,
                    node=node,
                    label=label,
                    first=args.first,
                    window=window,
                )
                operator.stop()
                print(figures, flush=True)
        finally:
            for operator in operators:
                operator.stop()
            with contextlib.suppress(Exception):
                embedded.delete_namespaces(client, [namespace])
                deadline = time.monotonic() + 180
                while (
                    time.monotonic() < deadline
                    and client.list(memcached_scale.POD, namespace=namespace)["items"]
                ):
                    time.sleep(2)
    print(figures)
    tables.dump(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
