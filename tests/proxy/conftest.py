"""Fixtures for the proxy's tests: an owner object and a running proxy on the real cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, Resource

CONFIGMAP = GVK("", "v1", "ConfigMap")


@pytest.fixture
def owner(kube: Client, namespace: str) -> KubeObject:
    """The object playing the custom resource: a ConfigMap (owners need only a uid)."""
    return kube.create(
        CONFIGMAP, {"metadata": {"name": "owner", "namespace": namespace}}, namespace=namespace
    )


@pytest.fixture
def running_proxy(kube: Client) -> Iterator[tuple[proxy.OwnerProxy, list[Any]]]:
    """A proxy on a free port; ``server.cached`` is its cache, the list its child reports."""
    seen: list[Any] = []
    cached: dict[tuple[str, str], KubeObject] = {}

    def lookup(resource: Resource, namespace: str, name: str) -> KubeObject | None:
        return cached.get((namespace, name))

    server = proxy.OwnerProxy(
        client=kube,
        on_child=lambda owner, resource, child: seen.append((owner, resource.plural, child)),
        cache=lookup,
    )
    server.cached = cached  # type: ignore[attr-defined]
    server.start()
    yield server, seen
    server.shutdown()
