"""Admission webhook benchmark: latency of webhook roles, alone and beside reconciles.

    .venv/bin/python -m bench.webhook [--requests 30] [--concurrent 20] [--rounds 3]
        [--load 50] [--json FILE]

One runner (warm launchers, defaults otherwise) serves two validating webhooks:

- ``assert-only``: one ``ansible.builtin.assert`` task (``bench/roles``-style, written
  into the work dir) on the ``Bench`` kind, whose reconcile role is the one-task role;
- ``memcached``: the flagship's ``roles/memcached_validate`` with ``roles/memcached``
  beside it, both under the benchmark's private group (``bench/workloads.py``), if the
  repository has it.

AdmissionReviews are POSTed straight to ``--webhook-port`` over HTTPS (a new TLS
connection each, as an API server without keep-alive would): the figures are the
webhook's own, the API server's hop excluded. Measured:

- one at a time: p50 / p99 over ``--requests`` reviews, and CPU seconds of the
  runner's process tree per admission (``bench/accounting.py``: /proc, children reaped
  inside the tree), with nothing else running;
- under load: ``--load`` Bench CRs created at once (2 reconcile workers), and while they
  reconcile, ``--rounds`` rounds of ``--concurrent`` reviews sent at once; p50 / p99.

Targets: p50 ≤ 0.25 s alone, p99 ≤ 1 s under load, on 2 cores.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import ssl
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench import accounting, convergence, embedded, ports, tables, workloads
from runner.kube.types import GVK
from runner.tools.scaffold import devhooks
from testkit.harness import OperatorProcess

ASSERT_ROLE = """---
- name: Size is at most 100
  ansible.builtin.assert:
    that: (size | default(0) | int) <= 100
    fail_msg: "size {{ size }} is over 100"
    quiet: true
"""


def _path(gvk: GVK) -> str:
    return f"/validate-{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def _review(obj: dict[str, Any]) -> bytes:
    request = {
        "uid": str(uuid.uuid4()),
        "operation": "CREATE",
        "object": obj,
        "userInfo": {"username": "bench"},
        "namespace": obj["metadata"]["namespace"],
        "name": obj["metadata"]["name"],
    }
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def _call(port: int, path: str, obj: dict[str, Any]) -> tuple[float, bool]:
    """One review: (seconds, allowed)."""
    context = ssl._create_unverified_context()
    started = time.monotonic()
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request("POST", path, body=_review(obj))
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    seconds = time.monotonic() - started
    if answer.status != 200:
        raise RuntimeError(f"POST {path}: {answer.status} {body[:200]!r}")
    return seconds, bool(json.loads(body)["response"]["allowed"])


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(_percentile(values, 0.50), 3),
        "p99": round(_percentile(values, 0.99), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def _concurrent(port: int, path: str, objs: list[dict[str, Any]]) -> list[float]:
    times: list[float] = []
    lock = threading.Lock()

    def one(obj: dict[str, Any]) -> None:
        seconds, _ = _call(port, path, obj)
        with lock:
            times.append(seconds)

    threads = [threading.Thread(target=one, args=(obj,)) for obj in objs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--ansible-verbosity", type=int, default=None, help="the runner's flag (default: its own)"
    )
    args = parser.parse_args()

    cluster, client = embedded.connect()
    workdir = Path(tempfile.mkdtemp(prefix="bench-webhook-"))
    namespace = embedded.create_namespace(client, f"bench-webhook-{uuid.uuid4().hex[:6]}")
    bench = workloads.one_task()
    bench.install(client)
    (workdir / "roles" / "assert_only" / "tasks").mkdir(parents=True)
    (workdir / "roles" / "assert_only" / "tasks" / "main.yml").write_text(ASSERT_ROLE)
    watches = bench.watches() + f"  validation:\n    role: {workdir / 'roles' / 'assert_only'}\n"
    hooks: dict[str, tuple[GVK, dict[str, Any]]] = {
        "assert-only": (bench.gvk, bench.obj("probe", namespace, size=3)),
    }
    if (workloads.ROOT / "roles" / "memcached_validate").is_dir():
        memcached = workloads.memcached(workdir)
        memcached.install(client)
        target = memcached.roles_dir / "memcached_validate"
        shutil.copytree(workloads.ROOT / "roles" / "memcached_validate", target)
        for path in target.rglob("*"):
            if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
                text = path.read_text().replace(
                    "cache.example.com/", f"{workloads.MEMCACHED_GROUP}/"
                )
                text = text.replace("_cache_example_com_memcached", memcached.var_prefix)
                path.write_text(text)
        watches += memcached.watches() + f"  validation:\n    role: {target}\n"
        hooks["memcached"] = (memcached.gvk, memcached.obj("probe", namespace))
    devhooks.certificates(workdir / "certs")  # the benchmark's client does not verify it
    port = ports.free_port()
    operator = OperatorProcess(
        workdir=workdir,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=watches,
        args=(
            f"--webhook-port={port}",
            "--webhook-host=127.0.0.1",
            f"--webhook-cert-dir={workdir / 'certs'}",
            *(
                [f"--ansible-verbosity={args.ansible_verbosity}"]
                if args.ansible_verbosity is not None
                else []
            ),
        ),
        env={"ANSIBLE_GATHERING": "explicit", "ENABLE_WEBHOOKS": "true"},
    )
    figures: dict[str, Any] = {}
    try:
        operator.start()
        assert operator._proc is not None
        pid = operator._proc.pid
        for label, (gvk, obj) in hooks.items():
            for _ in range(5):  # warm-up: the launchers start in the background
                _call(port, _path(gvk), obj)
            cpu_before, own_before = accounting.cpu_seconds(pid), accounting.cpu_split(pid)[0]
            alone = [_call(port, _path(gvk), obj)[0] for _ in range(args.requests)]
            cpu = (accounting.cpu_seconds(pid) - cpu_before) / args.requests
            own = (accounting.cpu_split(pid)[0] - own_before) / args.requests
            figures[label] = {
                "alone": _summary(alone),
                "cpu_s_per_admission": round(cpu, 3),
                # the runner process itself (HTTPS, ansible-runner, events); the rest is
                # ansible-playbook and its module runs, forked by the launchers
                "runner_cpu_s_per_admission": round(own, 3),
            }
            print(
                f"{label}: alone {figures[label]['alone']}, CPU-s/admission {cpu:.3f}"
                f" (runner process {own:.3f})",
                flush=True,
            )
        # Under load: CRs reconciling (2 workers) and rounds of concurrent reviews.
        names = [f"load-{i}" for i in range(args.load)]
        converged = convergence.Converged(client, bench.gvk, namespace)
        busy_since = accounting.machine_ticks()
        for name in names:
            client.create(bench.gvk, bench.obj(name, namespace), namespace=namespace)
        for label, (gvk, obj) in hooks.items() if args.rounds else ():
            loaded: list[float] = []
            for _ in range(args.rounds):
                loaded += _concurrent(port, _path(gvk), [obj] * args.concurrent)
            figures[label]["loaded"] = _summary(loaded)
            print(
                f"{label}: {args.concurrent} at once beside {args.load} CRs reconciling:"
                f" {figures[label]['loaded']}",
                flush=True,
            )
        figures["machine_busy_under_load"] = round(accounting.machine_busy(busy_since), 2)
        # How much of the load was still there: CRs not yet converged when the rounds ended.
        figures["crs_converged_when_rounds_ended"] = len(converged.times)
        if names:
            converged.wait(names, timeout=600)
        print(json.dumps(figures, indent=2))
        tables.dump(args.json, figures)
    finally:
        operator.stop()
        embedded.delete_namespaces(client, [namespace])
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
