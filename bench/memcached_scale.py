"""Memcached at scale (``make bench-memcached``): many CRs created, then upgraded.

    .venv/bin/python bench/memcached_scale.py [--count 20] [--size 3] [--json FILE]

One ``playbook-operator run`` (2 workers, warm Ansible, ``ANSIBLE_GATHERING=explicit``)
reconciles ``roles/memcached`` on the embedded cluster, under a private API group
(``bench/workloads.py``'s memcached workload, so that tests installing or deleting the real
CRD cannot touch the benchmark's objects). Two phases, each timed from the harness
(monotonic clock, the namespace's Memcacheds listed once a second):

- create: ``--count`` Memcacheds of ``--size`` pods at once → every one Available with
  its rollout complete (Progressing=False, ``size`` ready pods of the version);
- upgrade: all of them patched to a new version at once → every one reporting the new
  version in status with its rollout complete.

For each phase: wall time, Ansible runs (the runner's run-duration histogram), those of
them that ended asking for ``requeue_after`` while pods were changing (under watches.yaml a
one-minute safety net, which the Deployment's readiness supersedes when pods start
sooner: the key's pending requeue is folded into that run), runs per CR (2 in both
phases: the run the change triggers, and the one the Deployment's readiness triggers,
``watchDependentReadiness``), CPU
seconds of the runner's process tree (runner, warm launchers, Ansible) per run and in
all, and the tree's peak resident memory; then the idle RSS of the runner alone and of
its tree. The full figure is ``--count 100 --size 3`` (300 pods); the default is
smaller so that the run takes a few minutes on 2 cores. The pods run on a node of
their own (``testkit/pool.py``: a second kwok, pods ready within a second, no
limit on their number; the cluster's own node takes 110 pods and is shared with the
tests): what is measured is the operator, not kubelets.

``--node real`` puts the pods on the embedded cluster's real node instead
(``devcluster up --node real``: kubelet, containerd, the stand-in images), and measures
what kwok hides:

- CR → memcached answering: one Memcached of one pod created, until ``version`` is
  answered through its Service's ClusterIP (median of 5, each deleted afterwards);
- create and upgrade as above, with pods that take ``--ready-delay`` seconds (20) to
  become ready: the memcached stand-in retagged with an entrypoint that waits that long
  before memcached listens, so the role's tcpSocket readiness probe fails until then
  (versions ``1.6.38-alpine-ready20s`` → ``1.6.39-alpine-ready20s``), then a delete phase;
  CPU per CR lifetime is the runner tree's CPU over the three phases per CR;
- kubelet + containerd RSS with those pods running.

The runner still runs on the host, as in the kwok mode, so the figures compare.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import devcluster
from bench import accounting, convergence, embedded, tables, workloads
from devcluster import images, nodeconfig
from runner.kube import client as kube_client
from runner.kube import errors as kube_errors
from runner.kube.types import GVK
from testkit import pool
from testkit.harness import OperatorProcess

MiB = 1024 * 1024
POD = GVK("", "v1", "Pod")
SERVICE = GVK("", "v1", "Service")
STAND_IN = "docker.io/library/memcached"
OLD, NEW = "1.6.38-alpine", "1.6.39-alpine"


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def rolled_out(obj: dict[str, Any], *, size: int, version: str) -> bool:
    """The role reported this generation's rollout done: ``size`` ready pods of ``version``."""
    status = obj.get("status") or {}
    found = conditions(obj)
    return bool(
        status.get("observedGeneration") == obj["metadata"].get("generation")
        and found.get("Available") == "True"
        and found.get("Progressing") == "False"
        and status.get("readyReplicas") == size
        and status.get("version") == version
    )


def install(client: kube_client.Client, workload: workloads.Workload) -> None:
    """The workload's CRD as config/crd has it now (a copy left by an older checkout
    would prune the fields it does not know), then served."""
    try:
        client.create(embedded.CRD_GVK, workload.crd)
    except kube_errors.ConflictError:
        live = client.get(embedded.CRD_GVK, name=workload.crd["metadata"]["name"])
        meta = {**workload.crd["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}
        client.update(embedded.CRD_GVK, {**workload.crd, "metadata": meta})
    workload.install(client)


def watches(workload: workloads.Workload) -> str:
    """This repository's watches.yaml entry for Memcached, moved to the workload's group,
    without its webhooks: their roles are not copied, and the harness serves none
    (``ENABLE_WEBHOOKS=false``)."""
    entry = next(e for e in yaml.safe_load((workloads.ROOT / "watches.yaml").read_text()))
    entry.update(group=workload.gvk.group, role=str(workload.role_path))
    for key in ("validation", "mutation"):
        entry.pop(key, None)
    return str(yaml.safe_dump([entry], sort_keys=False))


def operator_for(
    *, cluster: devcluster.Cluster, client: kube_client.Client, workdir: Path, namespace: str
) -> tuple[workloads.Workload, OperatorProcess]:
    """The Memcached workload installed in ``workdir`` and a runner for it (not started)."""
    workload = workloads.memcached(workdir)
    install(client, workload)
    operator = OperatorProcess(
        workdir=workdir,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=watches(workload),
        args=("--log-level=info",),
        env={"ANSIBLE_ROLES_PATH": str(workload.roles_dir), "ANSIBLE_GATHERING": "explicit"},
    )
    return workload, operator


def wait_all(
    client: kube_client.Client,
    workload: workloads.Workload,
    namespace: str,
    done: Callable[[dict[str, Any]], bool],
    *,
    count: int,
    timeout: float,
) -> float:
    """Poll once a second until ``count`` objects are ``done``; returns when."""
    deadline = time.monotonic() + timeout
    while True:
        items = client.list(workload.gvk, namespace=namespace)["items"]
        finished = sum(1 for obj in items if done(obj))
        if finished >= count:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{finished}/{count} done after {timeout:g}s")
        time.sleep(1.0)


def phase(
    operator: OperatorProcess,
    *,
    act: Callable[[], None],
    wait: Callable[[], float],
) -> dict[str, Any]:
    """Run ``act``, wait until ``wait`` says all are done and the runner is quiet again."""
    runs_before = operator.runs()
    requeued_before = requeued(operator)
    cpu_before = accounting.cpu_seconds(operator_pid(operator))
    tree = accounting.PeakSampler(
        lambda: accounting.rss_bytes(accounting.descendants(operator_pid(operator)))
    )
    with tree:
        started = time.monotonic()
        act()
        finished = wait()
        convergence.settle(operator.runs, quiet=3.0, timeout=300)
    runs = operator.runs() - runs_before
    cpu = accounting.cpu_seconds(operator_pid(operator)) - cpu_before
    return {
        "wall_s": round(finished - started, 1),
        "runs": runs,
        "runs_requeued": requeued(operator) - requeued_before,
        "cpu_s": round(cpu, 1),
        "cpu_s_per_run": round(cpu / runs, 3) if runs else None,
        "tree_rss_peak_mib": round(tree.peak / MiB, 1),
    }


def operator_pid(operator: OperatorProcess) -> int:
    proc = operator._proc  # the harness keeps the Popen; the benchmark needs its pid
    assert proc is not None
    return proc.pid


def requeued(operator: OperatorProcess) -> int:
    """Reconciles after which the role asked to run again (``requeue_after``)."""
    return int(operator.metric("playbook_operator_reconcile_total", result="requeue_after"))


def slow_images(delay: int) -> tuple[str, str]:
    """The memcached stand-in as two versions whose memcached listens ``delay`` s after
    the container starts, built in podman and loaded into the real node."""
    versions = (f"{OLD}-ready{delay}s", f"{NEW}-ready{delay}s")
    containerfile = (
        f"FROM {STAND_IN}:{OLD}\n"
        f'ENTRYPOINT ["/bin/sh", "-c", "sleep {delay}; exec docker-entrypoint.sh \\"$@\\"", "--"]\n'
    )
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as context:
        (Path(context) / "Containerfile").write_text(containerfile)
        name = f"{STAND_IN}:{versions[0]}"
        subprocess.run(
            ["podman", "build", "--quiet", "-t", name, context], check=True, capture_output=True
        )
        subprocess.run(["podman", "tag", name, f"{STAND_IN}:{versions[1]}"], check=True)
    return versions


def answers_version(address: str) -> bool:
    try:
        with socket.create_connection((address, 11211), timeout=2.0) as conn:
            conn.sendall(b"version\r\n")
            return conn.recv(64).startswith(b"VERSION ")
    except OSError:
        return False


def time_to_answer(
    client: kube_client.Client, workload: workloads.Workload, namespace: str, *, name: str
) -> float:
    """Create a one-pod Memcached on the real node; seconds until its Service answers."""
    placement = {
        "nodeSelector": nodeconfig.node_selector(),
        "tolerations": [nodeconfig.toleration()],
    }
    started = time.monotonic()
    client.create(
        workload.gvk,
        workload.obj(name, namespace, size=1, version=OLD, **placement),
        namespace=namespace,
    )
    deadline = started + 180
    selector: dict[str, str | int | bool] = {"labelSelector": f"app.kubernetes.io/instance={name}"}
    while time.monotonic() < deadline:
        services = client.list(SERVICE, namespace=namespace, query=selector)["items"]
        address = services[0]["spec"].get("clusterIP") if services else None
        if address and answers_version(address):
            return time.monotonic() - started
        time.sleep(0.2)
    raise TimeoutError(f"memcached {name} did not answer within 180s")


def node_rss_mib(paths: nodeconfig.Paths) -> dict[str, float]:
    """RSS of the real node's kubelet and containerd (found by their command lines)."""
    found = {"kubelet": 0, "containerd": 0}
    for entry in Path("/proc").iterdir():
        line = accounting.cmdline(int(entry.name)) if entry.name.isdigit() else ""
        if not line:
            continue
        if f"--hostname-override={nodeconfig.NODE_NAME}" in line and "kubelet" in line:
            found["kubelet"] += accounting.rss_bytes([int(entry.name)])
        elif str(paths.containerd_config) in line and line.split()[0].endswith("containerd"):
            found["containerd"] += accounting.rss_bytes([int(entry.name)])
    return {k: round(v / MiB, 1) for k, v in found.items()}


def real_node(
    *,
    args: argparse.Namespace,
    cluster: devcluster.Cluster,
    client: kube_client.Client,
    namespace: str,
) -> dict[str, Any]:
    """The figures of ``--node real`` (see the module docstring)."""
    if not cluster.has_real_node():
        raise SystemExit("no real node: start one with `devcluster up --node real`")
    paths = nodeconfig.Paths.of(cluster.layout)
    old, new = slow_images(args.ready_delay)
    for version in (old, new):
        images.load(image=f"{STAND_IN}:{version}", paths=paths)
    placement = {
        "nodeSelector": nodeconfig.node_selector(),
        "tolerations": [nodeconfig.toleration()],
    }
    figures: dict[str, Any] = {"node": "real", "count": args.count, "size": args.size}
    with tempfile.TemporaryDirectory(prefix="bench-memcached-") as tmp:
        workdir = Path(tmp)
        workload, operator = operator_for(
            cluster=cluster, client=client, workdir=workdir, namespace=namespace
        )
        try:
            operator.start()
            answered = []
            for i in range(5):
                name = f"answer-{i}"
                answered.append(time_to_answer(client, workload, namespace, name=name))
                client.delete(workload.gvk, name=name, namespace=namespace)
            figures["answer_s"] = [round(a, 1) for a in answered]
            figures["answer_median_s"] = round(statistics.median(answered), 1)
            # The last answering CR's runs (its pod's readiness) must not count below.
            convergence.settle(operator.runs, quiet=5.0, timeout=120)

            names = [f"memcached-{i:03d}" for i in range(args.count)]

            def create() -> None:
                for name in names:
                    obj = workload.obj(name, namespace, size=args.size, version=old, **placement)
                    client.create(workload.gvk, obj, namespace=namespace)

            def upgrade() -> None:
                for name in names:
                    body = {"spec": {"version": new}}
                    client.patch(workload.gvk, name=name, namespace=namespace, body=body)

            def delete() -> None:
                for name in names:
                    client.delete(workload.gvk, name=name, namespace=namespace)

            def until(version: str) -> Callable[[], float]:
                return lambda: wait_all(
                    client,
                    workload,
                    namespace,
                    lambda obj: rolled_out(obj, size=args.size, version=version),
                    count=args.count,
                    timeout=args.timeout,
                )

            def gone() -> float:
                deadline = time.monotonic() + args.timeout
                while (
                    client.list(workload.gvk, namespace=namespace)["items"]
                    or client.list(POD, namespace=namespace)["items"]
                ):
                    if time.monotonic() > deadline:
                        raise TimeoutError("Memcacheds or pods left after deletion")
                    time.sleep(1.0)
                return time.monotonic()

            figures["create"] = phase(operator, act=create, wait=until(old))
            figures["upgrade"] = phase(operator, act=upgrade, wait=until(new))
            figures["node_rss_mib"] = node_rss_mib(paths)
            figures["delete"] = phase(operator, act=delete, wait=gone)
            cpu = sum(figures[p]["cpu_s"] for p in ("create", "upgrade", "delete"))
            figures["cpu_s_per_cr_lifetime"] = round(cpu / args.count, 2)
        finally:
            operator.stop()
    return figures


def print_real_node(figures: dict[str, Any]) -> None:
    count = figures["count"]
    print(
        f"\nreal node: CR → memcached answering (1 pod), median of 5: "
        f"{figures['answer_median_s']} s ({figures['answer_s']})"
    )
    rows = [
        [
            name,
            f"{f['wall_s']} s",
            str(f["runs"]),
            str(f["runs_requeued"]),
            f"{f['runs'] / count:.2f}",
            f"{f['cpu_s']} s",
        ]
        for name, f in (
            ("create → all Available", figures["create"]),
            ("upgrade → all report it", figures["upgrade"]),
            ("delete → all gone", figures["delete"]),
        )
    ]
    print(
        f"\n{count} Memcacheds x {figures['size']} pods, pods ready after "
        f"~{figures['ready_delay_s']} s\n"
    )
    print(tables.table(["phase", "wall", "runs", "requeued", "runs/CR", "CPU"], rows))
    rss = figures["node_rss_mib"]
    print(
        f"\nCPU per CR lifetime: {figures['cpu_s_per_cr_lifetime']} s; with "
        f"{count * figures['size']} pods running: kubelet {rss['kubelet']} MiB, containerd "
        f"{rss['containerd']} MiB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, help="Memcached CRs (default 20; 3 with --node real)")
    parser.add_argument(
        "--size", type=int, help="pods per Memcached (default 3; 2 with --node real)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="per phase, seconds")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--node",
        choices=("kwok", "real"),
        default="kwok",
        help="where the pods run: a kwok pool (default) or the real node",
    )
    parser.add_argument(
        "--ready-delay", type=int, default=20, help="--node real: seconds until pods are ready"
    )
    args = parser.parse_args(argv)
    real = args.node == "real"
    args.count = args.count or (3 if real else 20)
    args.size = args.size or (2 if real else 3)

    cluster, client = embedded.connect()
    stamp = f"{int(time.time()) % 100000}"
    namespace = embedded.create_namespace(client, f"bench-{stamp}-memcached-scale")
    if real:
        try:
            found = real_node(args=args, cluster=cluster, client=client, namespace=namespace)
        finally:
            with contextlib.suppress(Exception):
                embedded.delete_namespaces(client, [namespace])
        found["ready_delay_s"] = args.ready_delay
        print_real_node(found)
        tables.dump(args.json, found)
        return 0
    figures: dict[str, Any] = {"count": args.count, "size": args.size}
    with (
        embedded.service_room(client),
        tempfile.TemporaryDirectory(prefix="bench-memcached-") as tmp,
        pool.node_pool(cluster, client, workdir=Path(tmp), cidr="10.248.0.0/16") as node,
    ):
        workdir = Path(tmp)
        workload, operator = operator_for(
            cluster=cluster, client=client, workdir=workdir, namespace=namespace
        )
        names = [f"memcached-{i:03d}" for i in range(args.count)]
        try:
            operator.start()

            def create() -> None:
                for name in names:
                    obj = workload.obj(
                        name, namespace, size=args.size, version=OLD, **pool.placement(node)
                    )
                    client.create(workload.gvk, obj, namespace=namespace)

            def upgrade() -> None:
                for name in names:
                    client.patch(
                        workload.gvk,
                        name=name,
                        namespace=namespace,
                        body={"spec": {"version": NEW}},
                    )

            def until(version: str) -> Callable[[], float]:
                return lambda: wait_all(
                    client,
                    workload,
                    namespace,
                    lambda obj: rolled_out(obj, size=args.size, version=version),
                    count=args.count,
                    timeout=args.timeout,
                )

            figures["create"] = phase(operator, act=create, wait=until(OLD))
            figures["upgrade"] = phase(operator, act=upgrade, wait=until(NEW))
            runner = [operator_pid(operator)]
            figures["runner_rss_idle_mib"] = round(accounting.rss_bytes(runner) / MiB, 1)
            figures["tree_rss_idle_mib"] = round(
                accounting.rss_bytes(accounting.descendants(runner[0])) / MiB, 1
            )
        finally:
            operator.stop()
            with contextlib.suppress(Exception):
                embedded.delete_namespaces(client, [namespace])
                # The pool's kwok deletes the pods; let it before it stops.
                deadline = time.monotonic() + 180
                while (
                    time.monotonic() < deadline and client.list(POD, namespace=namespace)["items"]
                ):
                    time.sleep(2)

    rows = [
        [
            name,
            f"{f['wall_s']} s",
            str(f["runs"]),
            str(f["runs_requeued"]),
            f"{f['runs'] / args.count:.2f}",
            f"{f['cpu_s_per_run']} s",
            f"{f['cpu_s']} s",
            f"{f['tree_rss_peak_mib']} MiB",
        ]
        for name, f in (
            ("create → all Available", figures["create"]),
            ("upgrade → all report it", figures["upgrade"]),
        )
    ]
    print(
        f"\n{args.count} Memcacheds x {args.size} pods ({args.count * args.size} pods), "
        "2 workers, warm Ansible\n"
    )
    print(
        tables.table(
            ["phase", "wall", "runs", "requeued", "runs/CR", "CPU/run", "CPU", "tree RSS peak"],
            rows,
        )
    )
    print(
        f"\nidle RSS: runner {figures['runner_rss_idle_mib']} MiB, "
        f"with its launchers {figures['tree_rss_idle_mib']} MiB"
    )
    tables.dump(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
