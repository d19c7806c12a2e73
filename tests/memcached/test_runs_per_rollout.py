"""A rollout costs two runs, however long its pods take to get ready.

The role never waits for pods, and it does not poll them either: the Memcached entry
of watches.yaml reacts to its Deployment's readiness (``watchDependentReadiness``), so
the run that changed the Deployment reports Progressing and returns, and the next run
comes when the Deployment becomes ready. Pods here take 10 s (the slow pool's
``*-ready-after-10s`` tags): a role that asked to run again every few seconds while
they start would run 3 or 4 times per rollout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import devcluster
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for
from testkit.pool import placement
from tests.memcached.conftest import ROOT, Create, watches
from tests.memcached.test_levels import conditions, patch_spec, summary, wait_rolled_out

OLD = "1.6.38-ready-after-10s"
NEW = "1.6.39-ready-after-10s"
#: No run for this long after the rollout reported: the count is final.
QUIET = 4.0


@pytest.fixture(scope="module")
def operator(
    cluster: devcluster.Cluster,
    memcached_crd: GVK,
    mc_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    """The module's operator, with watches.yaml's safety net (a minute, not the tests' 5 s)."""
    entry = next(e for e in yaml.safe_load((ROOT / "watches.yaml").read_text()))
    safety = {"memcached_recheck_progressing": entry["vars"]["memcached_recheck_progressing"]}
    proc = OperatorProcess(
        workdir=tmp_path_factory.mktemp("operator"),
        kubeconfig=Path(cluster.kubeconfig),
        namespace=mc_namespace,
        watches=watches(safety),
        env={"ANSIBLE_ROLES_PATH": str(ROOT / "roles")},
    ).start()
    yield proc
    proc.stop()


def _runs(operator: OperatorProcess, name: str) -> int:
    """Finished reconciles of ``name`` so far."""
    return sum(
        1
        for line in list(operator.lines)
        if line.get("msg") == "reconciled" and str(line.get("object", "")).endswith(f"/{name}")
    )


def _settled(operator: OperatorProcess, name: str) -> int:
    """The run count of ``name`` once it has not moved for ``QUIET`` seconds."""
    seen = {"count": -1, "since": time.monotonic()}

    def quiet() -> bool:
        count = _runs(operator, name)
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return time.monotonic() - seen["since"] >= QUIET

    wait_for(quiet, describe=f"no run of {name} for {QUIET}s", timeout=120, interval=0.25)
    return _runs(operator, name)


def test_a_new_memcached_and_an_upgrade_cost_two_runs_each(
    kube: Client, mc_namespace: str, pool: str, create: Create, operator: OperatorProcess
) -> None:
    name = "two-runs"
    create(name, size=1, version=OLD, **placement(pool))
    wait_rolled_out(kube, mc_namespace, name, size=1, version=OLD)
    created = _settled(operator, name)
    assert created == 2, (
        f"expected 2 runs for a new Memcached whose pod takes 10 s (create, then ready), "
        f"saw {created}\n{operator.triggers()}"
    )

    patch_spec(kube, mc_namespace, name, {"version": NEW})
    upgraded = wait_rolled_out(kube, mc_namespace, name, size=1, version=NEW)
    assert conditions(upgraded)["Available"]["status"] == "True", summary(upgraded)
    bumped = _settled(operator, name) - created
    assert bumped == 2, (
        f"expected 2 runs for a version bump whose pod takes 10 s (apply, then ready), "
        f"saw {bumped}\n{operator.triggers()}"
    )
