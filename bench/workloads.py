"""The benchmarks' workloads: a CR kind, its CRD and the role that reconciles it.

- ``one-task``: a ``Bench`` kind whose role is one ``kubernetes.core.k8s`` task
  (``bench/roles/bench``);
- ``fifty-tasks``: a ``BenchFifty`` kind whose role is that task and 49 more of the
  kinds real operators' roles are mostly made of (``bench/roles/bench50``): the
  per-task cost of a run is the difference to ``one-task``, divided by 49;
- ``memcached``: this repository's ``roles/memcached`` with the CRD from
  ``config/crd/bases``, both copied under a private API group
  (``cache.bench.example.com``) so that tests installing or deleting the real
  CRD at the same time cannot delete the benchmark's objects. The role is the
  same text apart from that group.

A benchmark connects to the cluster (``bench/embedded.py``), installs a workload here and
waits for its objects (``bench/convergence.py``).
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import embedded
from runner.kube import client as kube_client
from runner.kube import errors as kube_errors
from runner.kube.types import GVK

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCH_GROUP = "bench.playbook-operator.dev"
MEMCACHED_GROUP = "cache.bench.example.com"


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A CR kind, its CRD and the role that reconciles it."""

    label: str
    gvk: GVK
    crd: dict[str, Any]
    roles_dir: Path  # holds the role; roles_path of a plain ansible-playbook run
    role: str
    spec: dict[str, Any]
    #: extra vars besides the object's own, for a plain ansible-playbook run
    var_prefix: str
    #: when the role's own work for an object is done, if it says so in status
    #: (the role may ask to run again until then): pods running, for memcached
    ready: Callable[[dict[str, Any]], bool] | None = None

    @property
    def role_path(self) -> Path:
        return self.roles_dir / self.role

    def watches(self) -> str:
        return (
            f"- version: {self.gvk.version}\n  group: {self.gvk.group}\n"
            f"  kind: {self.gvk.kind}\n  role: {self.role_path}\n"
        )

    def obj(self, name: str, namespace: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": self.gvk.api_version,
            "kind": self.gvk.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**self.spec, **spec},
        }

    def extra_vars(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What a runtime passes the role for ``obj`` (spec keys are already snake_case)."""
        meta = obj["metadata"]
        return {
            "ansible_operator_meta": {"name": meta["name"], "namespace": meta["namespace"]},
            **obj["spec"],
            self.var_prefix: obj,
            f"{self.var_prefix}_spec": obj["spec"],
        }

    def install(self, client: kube_client.Client) -> None:
        """Create the CRD (if missing) and wait until its kind is served."""
        with contextlib.suppress(kube_errors.ConflictError):
            client.create(embedded.CRD_GVK, self.crd)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.forget_discovery()
                client.resource(self.gvk)
                return
            except kube_errors.KubeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def open_crd(gvk: GVK, *, plural: str) -> dict[str, Any]:
    """A namespaced CRD of ``gvk``: one version, a status subresource, every field kept."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{gvk.group}"},
        "spec": {
            "group": gvk.group,
            "names": {"kind": gvk.kind, "listKind": f"{gvk.kind}List", "plural": plural}
            | {"singular": gvk.kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": gvk.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def one_task() -> Workload:
    """The ``Bench`` kind and its one-task role (``bench/roles/bench``)."""
    gvk = GVK(BENCH_GROUP, "v1", "Bench")
    crd = open_crd(gvk, plural="benches")
    return Workload(
        label="one-task",
        gvk=gvk,
        crd=crd,
        roles_dir=HERE / "roles",
        role="bench",
        spec={"value": 0},
        var_prefix="_bench_playbook_operator_dev_bench",
    )


def fifty_tasks() -> Workload:
    """The ``BenchFifty`` kind and its 50-task role (``bench/roles/bench50``): the one-task
    role's task and 49 more, skipped ``kubernetes.core`` tasks, facts and checks."""
    gvk = GVK(BENCH_GROUP, "v1", "BenchFifty")
    return Workload(
        label="fifty-tasks",
        gvk=gvk,
        crd=open_crd(gvk, plural="benchfifties"),
        roles_dir=HERE / "roles",
        role="bench50",
        spec={"value": 0},
        var_prefix="_bench_playbook_operator_dev_benchfifty",
    )


def memcached(workdir: Path, *, collection: str = "playbook_operator.util") -> Workload:
    """``roles/memcached`` and its CRD, copied into ``workdir`` under a private group.

    ``collection`` replaces the role's ``playbook_operator.util`` (``operator_sdk.util``
    for a role that runs on both runtimes, as one written for ansible-operator has it).
    """
    source = yaml.safe_load(
        (ROOT / "config" / "crd" / "bases" / "cache.example.com_memcacheds.yaml").read_text()
    )
    old_prefix = "_cache_example_com_memcached"
    new_prefix = "_" + MEMCACHED_GROUP.replace(".", "_") + "_memcached"
    crd = copy.deepcopy(source)
    crd["spec"]["group"] = MEMCACHED_GROUP
    crd["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{MEMCACHED_GROUP}"}
    roles_dir = workdir / "roles"
    target = roles_dir / "memcached"
    shutil.copytree(ROOT / "roles" / "memcached", target)
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
            text = path.read_text()
            text = text.replace("cache.example.com/", f"{MEMCACHED_GROUP}/")
            text = text.replace(old_prefix, new_prefix)
            text = text.replace("playbook_operator.util.", f"{collection}.")
            path.write_text(text)
    version = crd["spec"]["versions"][0]["name"]
    return Workload(
        label="memcached",
        gvk=GVK(MEMCACHED_GROUP, version, crd["spec"]["names"]["kind"]),
        crd=crd,
        roles_dir=roles_dir,
        role="memcached",
        spec={"size": 1},
        var_prefix=new_prefix,
        ready=pods_reported,
    )


def pods_reported(obj: dict[str, Any]) -> bool:
    """The memcached role reported in status that its pods run, at this generation."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    size = int((obj.get("spec") or {}).get("size", 1))
    ready = status.get("readyReplicas", len(status.get("nodes") or []))
    return status.get("observedGeneration") == meta.get("generation") and str(ready) == str(size)
