"""Fixtures for tests on the embedded cluster: ``cluster``, ``namespace`` and ``kube``.

Tests that use them, and tests that run real Ansible or other processes, are marked
``integration`` automatically (``testkit.lanes`` holds the table), so
``pytest -m 'not integration'`` runs without building or starting anything, in about a
minute. The same table marks the slow ``lane`` and the ``xdist_group`` of the tests that
share cluster-scoped state, for parallel runs (``pytest -n 3 --dist loadgroup``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import devcluster
from runner.kube import client, config, errors
from runner.kube.types import GVK
from testkit import lanes
from testkit.helpers import unique_name

pytest_plugins = ("tests.runner.support",)

# Runners the tests start serve the repository's watches.yaml, whose Memcached entry has
# admission webhooks: those need a serving certificate, which only the webhook tests make
# (they pass ENABLE_WEBHOOKS=true). kubebuilder's switch; config/manager sets it too.
os.environ.setdefault("ENABLE_WEBHOOKS", "false")

# Property tests (testkit.hostile): a short run in make check and make test, a long one in
# make fuzz (HYPOTHESIS_PROFILE=fuzz, FUZZ_EXAMPLES examples per test). No deadline: a
# case's time depends on the machine's load, not on the code under test.
settings.register_profile(
    "default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

CLUSTER_FIXTURES = frozenset({"cluster", "namespace", "kube", "start_operator", "probe_crd"})
NAMESPACE = GVK("", "v1", "Namespace")


ROOT = Path(__file__).resolve().parents[1]
# The CRDs many tests apply with `kubectl apply` as they start (probe_crd and its
# siblings). Two workers applying one that does not exist yet both create it, and one
# fails with AlreadyExists: the `cluster` fixture applies them once first, under a lock.
SHARED_CRDS = (
    ROOT / "testkit" / "fixtures" / "crd.yaml",
    ROOT / "tests" / "operations" / "leader" / "fixtures" / "crd.yaml",
    ROOT / "tests" / "operations" / "sharding" / "fixtures" / "crd.yaml",
    ROOT / "tests" / "webhook" / "fixtures" / "crds.yaml",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "xdist_group(name): tests of one group run on one worker (--dist loadgroup)"
    )


# tryfirst: before pytest's -m selection and xdist's loadgroup read the marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        placement = lanes.place(
            item.nodeid,
            fixtures=frozenset(getattr(item, "fixturenames", ())),
            cluster_fixtures=CLUSTER_FIXTURES,
        )
        if placement.integration:
            item.add_marker(pytest.mark.integration)
        if placement.lane:
            item.add_marker(pytest.mark.lane)
        if placement.exclusive:
            item.add_marker(pytest.mark.exclusive)
        if placement.group:
            item.add_marker(pytest.mark.xdist_group(placement.group))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadgroup, grouping by testkit.lanes (see testkit/scheduling.py for why)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from testkit import scheduling  # noqa: PLC0415 (it imports xdist: only under xdist)

    return scheduling.LaneGroupScheduling(config, log)


def _apply_shared_crds(cluster: devcluster.Cluster) -> None:
    """Apply SHARED_CRDS once per cluster, whichever worker (or run) comes first."""
    with (cluster.data_dir / "pytest-crds.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        for path in SHARED_CRDS:
            cluster.kubectl("apply", "-f", str(path))


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[devcluster.Cluster]:
    """The cluster of ``make cluster-up`` if it answers, else one of our own for the session."""
    shared = devcluster.Cluster()
    if shared.kubeconfig.is_file() and shared.is_running():
        _apply_shared_crds(shared)
        yield shared
        return
    devcluster.build(skip_overridden=True)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Parallel workers share one cluster, not one each: make cluster-up's, started by
        # whichever worker comes first (devcluster's lock makes the others wait and reuse
        # it), and left up as make test leaves it.
        shared.start()
        _apply_shared_crds(shared)
        yield shared
        return
    # Its own data dir and kernel-chosen ports, so it never collides with `make cluster-up`.
    own = devcluster.Cluster(
        devcluster.default_data_dir() / f"pytest-{os.getpid()}", prefer_default_ports=False
    )
    own.start()
    try:
        _apply_shared_crds(own)
        yield own
    finally:
        own.stop()
        # Keep the component logs of a failed session for post-mortems.
        if request.session.testsfailed == 0:
            shutil.rmtree(own.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def kube(cluster: devcluster.Cluster) -> client.Client:
    """The runner's own client, as admin on the embedded cluster."""
    return client.Client(config.from_kubeconfig(str(cluster.kubeconfig)))


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube: client.Client) -> Iterator[str]:
    """A fresh namespace named after the test; deleted afterwards (without waiting)."""
    name = unique_name(request.node.name, max_length=40)
    kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(errors.NotFoundError):
        kube.delete(NAMESPACE, name=name)
