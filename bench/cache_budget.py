"""The cache budget: does the runner's memory follow the cluster?

    .venv/bin/python -m bench.cache_budget [--old DIR] [--json FILE] [--clean]

A runner watching all namespaces is started on the embedded cluster with one CR, until
its runs settle (its dependent informers then list and watch the CR's children's kinds
in every namespace); the resident memory of the runner and its warm launchers (from
/proc, the smallest of 10 samples half a second apart, each taken while no run is in
flight: a run adds its own processes) is read, and the runner is stopped.
That is done without, then with, noise in the cluster: 20,000 ConfigMaps and 5,000
Secrets of 1 KiB each in 20 namespaces that no operator owns. The figure is the ratio
with/without (target ≤ 1.2).

Two operators:

- ``memcached``: this repository's watches.yaml and ``roles/memcached``; its children
  are a Deployment, a Service and a PodDisruptionBudget — no ConfigMap or Secret;
- ``owner``: a role that owns one ConfigMap and one Secret (the costly case:
  a dependent watch of a kind the cluster holds many of).

Each under an API group of this benchmark's own (``cache.budget.bench.example.com``,
``budget.bench.playbook-operator.dev``): a runner watching all namespaces reconciles
every CR of its kinds, and other benchmarks' CRs must neither be taken over nor counted.

``--old DIR`` also measures the code in DIR (``git archive HEAD | tar -x -C DIR``; run
with ``PYTHONPATH=DIR``) side by side, on the same noise. The noise is created once
(8 threads, each with its own client) in namespaces labelled
``playbook-operator.dev/bench=cache-budget`` (objects that exist are not created again)
and deleted at the end; ``--clean`` deletes what an interrupted run left, which a run
refuses to start with (its "without" would not be).
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import copy
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import accounting, convergence, embedded, memcached_scale, workloads
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK
from testkit.harness import OperatorProcess

MiB = 1024 * 1024
SECRET = GVK("", "v1", "Secret")
LABEL = ("playbook-operator.dev/bench", "cache-budget")
MEMCACHED_GROUP = "cache.budget.bench.example.com"
OWNER_GROUP = "budget.bench.playbook-operator.dev"
NAMESPACES = 20
CONFIGMAPS = 20_000
SECRETS = 5_000
THREADS = 8
PAYLOAD = "x" * 1024

OWNER_ROLE = """---
- name: Own a ConfigMap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-config"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        value: "{{ value | default('0') | string }}"
- name: Own a Secret
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: Secret
      metadata:
        name: "{{ ansible_operator_meta.name }}-secret"
        namespace: "{{ ansible_operator_meta.namespace }}"
      stringData:
        value: "{{ value | default('0') | string }}"
"""


@dataclasses.dataclass(frozen=True)
class Operator:
    label: str
    workload: workloads.Workload
    watches: str


def _private(workload: workloads.Workload, group: str) -> workloads.Workload:
    """``workload`` under an API group of this benchmark's own.

    A runner watching all namespaces reconciles every CR of its kinds: under the group
    other benchmarks share, it would take over their CRs (and they would count here).
    """
    crd = copy.deepcopy(workload.crd)
    crd["spec"]["group"] = group
    crd["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{group}"}
    old_prefix = workload.var_prefix
    prefix = "_" + group.replace(".", "_").replace("-", "_") + "_" + workload.gvk.kind.lower()
    for path in workload.role_path.rglob("*"):
        if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
            text = path.read_text().replace(f"{workload.gvk.group}/", f"{group}/")
            path.write_text(text.replace(old_prefix, prefix))
    gvk = GVK(group, workload.gvk.version, workload.gvk.kind)
    return dataclasses.replace(workload, gvk=gvk, crd=crd, var_prefix=prefix)


def operators(workdir: Path) -> list[Operator]:
    memcached = _private(workloads.memcached(workdir), MEMCACHED_GROUP)
    roles = workdir / "owner-roles"
    (roles / "owner" / "tasks").mkdir(parents=True)
    (roles / "owner" / "tasks" / "main.yml").write_text(OWNER_ROLE)
    owner = dataclasses.replace(workloads.one_task(), label="owner", roles_dir=roles, role="owner")
    owner = _private(owner, OWNER_GROUP)
    return [
        Operator("memcached", memcached, memcached_scale.watches(memcached)),
        Operator("owner", owner, owner.watches()),
    ]


# -- noise ----------------------------------------------------------------------


def _client(cluster: Any) -> kube_client.Client:
    return kube_client.Client(kube_config.from_kubeconfig(str(cluster.kubeconfig)))


def make_noise(cluster: Any, client: kube_client.Client) -> float:
    """Create (or complete) the noise; seconds it took."""
    started = time.monotonic()
    jobs: list[tuple[GVK, str, str]] = []
    for index in range(NAMESPACES):
        namespace = f"cache-budget-noise-{index:02d}"
        body = {"metadata": {"name": namespace, "labels": dict([LABEL])}}
        with contextlib.suppress(kube_errors.ConflictError):
            client.create(embedded.NAMESPACE, body)
        for gvk, count in ((embedded.CONFIGMAP, CONFIGMAPS), (SECRET, SECRETS)):
            have = {
                item["metadata"]["name"]
                for item in client.list(gvk, namespace=namespace).get("items") or []
            }
            prefix = "noise-cm" if gvk == embedded.CONFIGMAP else "noise-secret"
            for n in range(count // NAMESPACES):
                if f"{prefix}-{n:04d}" not in have:
                    jobs.append((gvk, namespace, f"{prefix}-{n:04d}"))
    secret_payload = base64.b64encode(os.urandom(768)).decode()  # 1 KiB once encoded

    def create(chunk: list[tuple[GVK, str, str]]) -> None:
        own = _client(cluster)  # one client (one connection pool) per thread
        for gvk, namespace, name in chunk:
            data = {"payload": secret_payload if gvk == SECRET else PAYLOAD}
            body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
            with contextlib.suppress(kube_errors.ConflictError):
                own.create(gvk, body, namespace=namespace)

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        for done in pool.map(create, [jobs[i::THREADS] for i in range(THREADS)]):
            del done
    return time.monotonic() - started


def noise_namespaces(client: kube_client.Client) -> list[str]:
    query = f"{LABEL[0]}={LABEL[1]}"
    listed = client.list_objects("/api/v1/namespaces", query={"labelSelector": query})
    return [item["metadata"]["name"] for item in listed.items]


def delete_noise(client: kube_client.Client) -> None:
    embedded.delete_namespaces(client, noise_namespaces(client))


# -- one measurement ----------------------------------------------------------------


def rss() -> tuple[int, int]:
    """RSS of (the runner, the runner and its warm launchers): this process's descendants."""
    me = os.getpid()
    tree = [pid for pid in accounting.descendants(me) if pid != me]
    return accounting.rss_bytes(
        pid for pid in tree if accounting.parent(pid) == me
    ), accounting.rss_bytes(tree)


def measure(
    *, cluster: Any, client: kube_client.Client, operator: Operator, namespace: str, old: str
) -> dict[str, Any]:
    """Start a runner of ``operator`` on all namespaces, settle, sample RSS, stop it."""
    name = f"{operator.label}-{int(time.time() * 1000) % 10**8}"
    client.create(
        operator.workload.gvk, operator.workload.obj(name, namespace), namespace=namespace
    )
    env = {"WATCH_NAMESPACE": "", "ANSIBLE_GATHERING": "explicit"}
    if old:
        env["PYTHONPATH"] = old
    with tempfile.TemporaryDirectory(prefix="cache-budget-") as workdir:
        proc = OperatorProcess(
            workdir=Path(workdir),
            kubeconfig=Path(cluster.kubeconfig),
            namespace=namespace,
            watches=operator.watches,
            args=("--log-level=info",),
            env=env,
        )
        started = time.monotonic()
        try:
            proc.start()
            proc.eventually(proc.runs, describe="a first run", timeout=180)
            runs = convergence.settle(proc.runs, quiet=5.0, timeout=180)
            settled = time.monotonic() - started
            # Idle memory: a run in progress adds its own processes to the tree. The
            # smallest of 10 samples, taken while no run is in flight.
            samples: list[tuple[int, int]] = []
            while len(samples) < 10:
                if proc.metric("playbook_operator_runs_in_flight") == 0:
                    samples.append(rss())
                time.sleep(0.5)
            held = {
                kind: proc.metric("playbook_operator_informer_objects", kind=kind)
                for kind in ("ConfigMap", "Secret")
            }
        finally:
            proc.stop()
    with contextlib.suppress(kube_errors.KubeError):
        client.delete(operator.workload.gvk, name=name, namespace=namespace)
    return {
        "rss_mib": round(min(tree for _, tree in samples) / MiB, 1),
        "runner_mib": round(min(runner for runner, _ in samples) / MiB, 1),
        "runs": runs,
        "settled_s": round(settled, 1),
        "held": held,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default="", help="also measure the code in this directory")
    parser.add_argument("--clean", action="store_true", help="delete leftover noise and exit")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    cluster, client = embedded.connect()
    if args.clean or noise_namespaces(client):
        delete_noise(client)
        print(
            "deleted the noise namespaces"
            if args.clean
            else "noise of an earlier run: deleted; run again once its namespaces are gone"
        )
        return 0 if args.clean else 1
    codes = [("old", str(Path(args.old).resolve()))] if args.old else []
    codes.append(("new", ""))
    results: dict[str, dict[str, Any]] = {}
    namespace = embedded.create_namespace(client, f"cache-budget-{os.getpid()}")
    try:
        with tempfile.TemporaryDirectory(prefix="cache-budget-roles-") as roles:
            ops = operators(Path(roles))
            for op in ops:
                op.workload.install(client)
            for phase in ("without", "with"):
                if phase == "with":
                    print(f"noise created in {make_noise(cluster, client):.0f} s", flush=True)
                for code, path in codes:
                    for op in ops:
                        key = f"{op.label}/{code}/{phase}"
                        results[key] = measure(
                            cluster=cluster,
                            client=client,
                            operator=op,
                            namespace=namespace,
                            old=path,
                        )
                        print(key, results[key], flush=True)
    finally:
        embedded.delete_namespaces(client, [namespace])
        delete_noise(client)
    print(f"\n{'operator':10} {'code':4} {'without':>9} {'with':>9} {'ratio':>6}   runner alone")
    for op_label in ("memcached", "owner"):
        for code, _ in codes:
            without = results[f"{op_label}/{code}/without"]
            with_ = results[f"{op_label}/{code}/with"]
            ratio = with_["rss_mib"] / without["rss_mib"]
            results[f"{op_label}/{code}/ratio"] = {"ratio": round(ratio, 2)}
            print(
                f"{op_label:10} {code:4} {without['rss_mib']:7.1f}Mi {with_['rss_mib']:7.1f}Mi "
                f"{ratio:6.2f}   {without['runner_mib']:.1f} → {with_['runner_mib']:.1f} Mi"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
