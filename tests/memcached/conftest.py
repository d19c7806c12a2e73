"""Fixtures for the Memcached operator's tests: the CRD, a slow node pool, an operator.

Each test module gets its own namespace, pool node and ``playbook-operator run``
process (2 workers) running this repository's watches.yaml and roles/memcached; the
tests in a module share them and name their Memcacheds apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import pool as pool_mod
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name, wait_for

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = GVK("", "v1", "Namespace")
POD = GVK("", "v1", "Pod")
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")

#: Watches-file `vars` the tests run the role with: a degraded Memcached, and a rollout
#: under way, are looked at again after 5 s rather than a minute, so that tests see a new
#: pod's ImagePullBackOff before a 10 s progress deadline, and the deadline pass quickly.
#: (The Deployment's readiness brings the role back anyway; test_runs_per_rollout.py runs
#: with watches.yaml's one-minute safety net.)
TEST_VARS = {"memcached_recheck_degraded": "5s", "memcached_recheck_progressing": "5s"}


def watches(extra_vars: dict[str, Any] | None = None) -> str:
    """This repository's watches.yaml with ``extra_vars`` added to the Memcached entry."""
    entries = yaml.safe_load((ROOT / "watches.yaml").read_text())
    for entry in entries:
        if entry["kind"] == "Memcached":
            entry["vars"] = {**entry.get("vars", {}), **TEST_VARS, **(extra_vars or {})}
    return str(yaml.safe_dump(entries, sort_keys=False))


@pytest.fixture(scope="module")
def memcached_crd(cluster: devcluster.Cluster) -> GVK:
    """config/crd applied (tests/memcached/test_deploy.py deletes it when it ends)."""
    cluster.kubectl("apply", "-k", str(ROOT / "config" / "crd"))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/memcacheds.cache.example.com"
    )
    return MEMCACHED


@pytest.fixture(scope="module")
def pool(
    cluster: devcluster.Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A tainted node whose kwok readies pods as their memcached tag says (see pool.py)."""
    with pool_mod.node_pool(cluster, kube, workdir=tmp_path_factory.mktemp("pool")) as name:
        yield name


@pytest.fixture(scope="module")
def mc_namespace(request: pytest.FixtureRequest, kube: Client, pool: str) -> Iterator[str]:
    """A namespace for the module; on the way out, waits for its pods to go while the
    pool's kwok still runs (a pod on a node without a kubelet never finishes deleting)."""
    name = unique_name(request.module.__name__.rpartition(".")[2], max_length=40)
    kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(kube_errors.NotFoundError):
        kube.delete(NAMESPACE, name=name)
    with contextlib.suppress(AssertionError):
        wait_for(
            lambda: kube.list(POD, namespace=name)["items"],
            until=lambda pods: not pods,
            describe=f"the pods of namespace {name} deleted",
            timeout=120,
            interval=1,
        )


@pytest.fixture(scope="module")
def operator(
    cluster: devcluster.Cluster,
    memcached_crd: GVK,
    mc_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    """``playbook-operator run`` on watches.yaml and roles/memcached, admin credentials."""
    proc = OperatorProcess(
        workdir=tmp_path_factory.mktemp("operator"),
        kubeconfig=Path(cluster.kubeconfig),
        namespace=mc_namespace,
        watches=watches(),
        env={"ANSIBLE_ROLES_PATH": str(ROOT / "roles")},
    ).start()
    yield proc
    proc.stop()


Create = Callable[..., dict[str, Any]]


@pytest.fixture
def create(kube: Client, mc_namespace: str, operator: OperatorProcess) -> Create:
    """Create a Memcached in the module's namespace: ``create(name, **spec)``."""

    def make(name: str, **spec: Any) -> dict[str, Any]:
        return kube.create(
            MEMCACHED,
            {
                "apiVersion": MEMCACHED.api_version,
                "kind": MEMCACHED.kind,
                "metadata": {"name": name, "namespace": mc_namespace},
                "spec": spec,
            },
            namespace=mc_namespace,
        )

    return make
