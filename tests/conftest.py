"""Fixtures for tests on the embedded cluster: ``cluster``, ``namespace`` and ``kube``.

Tests that use them are marked ``integration`` automatically, so
``pytest -m 'not integration'`` runs without building or starting anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest

import devcluster
from runner.kube import client, config, errors
from runner.kube.types import GVK
from testkit.helpers import unique_name

pytest_plugins = ("tests.runner.support",)

# Runners the tests start serve the repository's watches.yaml, whose Memcached entry has
# admission webhooks: those need a serving certificate, which only the webhook tests make
# (they pass ENABLE_WEBHOOKS=true). kubebuilder's switch; config/manager sets it too.
os.environ.setdefault("ENABLE_WEBHOOKS", "false")

CLUSTER_FIXTURES = frozenset({"cluster", "namespace", "kube", "start_operator", "probe_crd"})
NAMESPACE = GVK("", "v1", "Namespace")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[devcluster.Cluster]:
    """The cluster of ``make cluster-up`` if it answers, else one of our own for the session."""
    shared = devcluster.Cluster()
    if shared.kubeconfig.is_file() and shared.is_running():
        yield shared
        return
    devcluster.build(skip_overridden=True)
    # Its own data dir and kernel-chosen ports, so it never collides with `make cluster-up`.
    own = devcluster.Cluster(
        devcluster.default_data_dir() / f"pytest-{os.getpid()}", prefer_default_ports=False
    )
    own.start()
    try:
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
