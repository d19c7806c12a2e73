"""A node pool on the embedded cluster whose pods are slow to get ready, or never are.

The embedded cluster's kwok makes every pod Running and Ready within a second. Tests
of rollouts that take time or fail run a second kwok for one extra node, with the
stages of ``molecule/embedded/kwok-pool-stages.yaml``: the memcached image's tag
decides (``*-ready-after-20s``, ``*-never-ready``, anything else: at once). The node
is tainted, so only pods that tolerate the taint and select the node (``placement``,
a Memcached's spec.nodeSelector and spec.tolerations) land on it; the shared
cluster's other tests never see it.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import devcluster
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import unique_name, wait_for

ROOT = Path(__file__).resolve().parents[1]
STAGES = ROOT / "molecule" / "embedded" / "kwok-pool-stages.yaml"
NODE = GVK("", "v1", "Node")
POOL_LABEL = "memcached.example.com/test-pool"


def placement(name: str) -> dict[str, Any]:
    """The spec fields that put a Memcached's pods on pool ``name``."""
    return {
        "nodeSelector": {POOL_LABEL: name},
        "tolerations": [
            {"key": POOL_LABEL, "operator": "Equal", "value": name, "effect": "NoSchedule"}
        ],
    }


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@contextlib.contextmanager
def node_pool(
    cluster: devcluster.Cluster, kube: Client, *, workdir: Path, cidr: str = "10.247.0.0/16"
) -> Iterator[str]:
    """Create the pool's node and run its kwok; yields the pool's name."""
    name = unique_name("memcached-pool", max_length=40)
    kube.create(
        NODE,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {"kwok.x-k8s.io/node": name},
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", POOL_LABEL: name},
            },
            "spec": {"taints": [{"key": POOL_LABEL, "value": name, "effect": "NoSchedule"}]},
        },
    )
    log = (workdir / "kwok-pool.log").open("w")
    kwok = subprocess.Popen(
        [
            str(devcluster.resolve("kwok")),
            f"--kubeconfig={cluster.kubeconfig}",
            f"--config={STAGES}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node={name}",
            f"--cidr={cidr}",
            "--node-ip=127.0.0.1",
            "--node-lease-duration-seconds=40",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(
            lambda: kube.get(NODE, name=name),
            until=_ready,
            describe=f"node {name} Ready (kwok log: {workdir / 'kwok-pool.log'})",
            timeout=60,
        )
        yield name
    finally:
        kwok.terminate()
        try:
            kwok.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kwok.kill()
            kwok.wait()
        log.close()
        with contextlib.suppress(kube_errors.NotFoundError):
            kube.delete(NODE, name=name)
