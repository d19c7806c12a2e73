"""The start-up spread's reads of recorded children: from a synced store, not a GET each.

Integration tests on the real cluster: a ConfigMap plays the owner; its children are
watched by :class:`runner.watch.dependents.DependentWatches`. After a restart the spread
(:mod:`runner.reconcile.startup`) compares each recorded child's uid and generation
(or resourceVersion); :class:`runner.operations.children.ChildWatch` answers from the
dependent store once it has synced, slim copies included, and asks the API server only
for what the store does not hold.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.operations import caches, children, needs
from runner.proxy import ownership
from runner.reconcile import startup
from runner.watch import dependents
from testkit.helpers import wait_for
from tests.watch.budget.conftest import CONFIGMAP, SECRET, Registry, owner_watch

pytestmark = pytest.mark.integration


class CountingClient:
    """The real client, counting the GETs made through it."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.gets: list[str] = []

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        self.gets.append(f"{gvk.kind}/{name}")
        return self._client.get(gvk, name=name, namespace=namespace)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class NoNeeds:
    def dependent(self, *_: object) -> None:
        return None


def _synced(watching: dependents.DependentWatches) -> None:
    wait_for(
        lambda: watching.informers() and all(i.synced.is_set() for i in watching.informers()),
        describe="every dependent informer to list",
        timeout=30,
    )


def _child(obj: KubeObject) -> startup.Child:
    meta = obj["metadata"]
    return startup.Child(
        api_version=obj.get("apiVersion") or "v1",
        kind=obj.get("kind") or "",
        namespace=meta["namespace"],
        name=meta["name"],
    )


def test_metadata_answers_from_slim_copies_that_runs_never_read(
    registry: Registry, kube: Client, owner: KubeObject, child: Any
) -> None:
    watching = registry(owner_watch())
    secret = child(SECRET, "credentials")
    config = child(CONFIGMAP, "settings")
    stranger = child(CONFIGMAP, "stranger", owned=False)
    for obj in (secret, config):
        watching.ensure(ownership.Owner.of(owner), kube.resource(GVK.of(obj)), obj)
    _synced(watching)
    namespace = owner["metadata"]["namespace"]
    secrets, configmaps = kube.resource(SECRET), kube.resource(CONFIGMAP)
    slim = watching.metadata(secrets, namespace, "credentials")
    assert slim is not None, "expected the Secret's slim copy to answer a metadata read"
    assert startup.version_of(slim) == startup.version_of(secret), (
        f"expected the store's uid and version {startup.version_of(secret)}, "
        f"saw {startup.version_of(slim)}"
    )
    assert watching.get(secrets, namespace, "credentials") is None, (
        "expected a run's read never to be served a slim copy"
    )
    whole = watching.metadata(configmaps, namespace, "settings")
    assert whole is not None and whole.get("data") == {"key": "value"}, whole
    assert watching.metadata(configmaps, namespace, stranger["metadata"]["name"]) is None, (
        "expected no answer for an object no watched kind owns: the caller asks the server"
    )


def test_recorded_children_are_read_from_the_store_once_it_has_synced(
    registry: Registry, kube: Client, owner: KubeObject, child: Any
) -> None:
    watching = registry(owner_watch())
    held = caches.Caches()
    held.dependents = watching
    counting = CountingClient(kube)
    reader = children.ChildWatch(
        client=cast(Client, counting),
        record=startup.Children(),
        caches=held,
        needs=cast(needs.RuntimeNeeds, NoNeeds()),
    )
    first, second = child(CONFIGMAP, "first"), child(SECRET, "second")
    # Before any watch of their kinds: the API server answers (and the watches start).
    for obj in (first, second):
        live = reader.read(_child(obj), owner)
        assert live is not None and startup.version_of(live) == startup.version_of(obj), live
    assert counting.gets == ["ConfigMap/first", "Secret/second"], counting.gets
    _synced(watching)
    third = child(CONFIGMAP, "third")
    wait_for(
        lambda: watching.metadata(
            kube.resource(CONFIGMAP), third["metadata"]["namespace"], "third"
        ),
        describe="the ConfigMap informer to hold 'third'",
        timeout=30,
    )
    counting.gets.clear()
    for obj in (first, second, third):
        live = reader.read(_child(obj), owner)
        assert live is not None and startup.version_of(live) == startup.version_of(obj), (
            f"expected {obj['metadata']['name']} at {startup.version_of(obj)}, saw {live}"
        )
    assert counting.gets == [], (
        f"expected every read from the synced stores, saw GETs {counting.gets}"
    )
    stranger = child(CONFIGMAP, "stranger", owned=False)
    assert reader.read(_child(stranger), owner) is not None
    assert counting.gets == ["ConfigMap/stranger"], (
        f"expected what the store does not hold read from the API server, saw {counting.gets}"
    )
    gone = startup.Child(
        api_version="v1", kind="ConfigMap", namespace=owner["metadata"]["namespace"], name="gone"
    )
    assert reader.read(gone, owner) is None, "expected a deleted child to read as None"
