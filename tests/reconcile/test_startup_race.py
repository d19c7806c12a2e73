"""The restart spread's reads do not race the dependent watches' first lists.

At start-up a recorded child is read before its kind's dependent watch exists; the read
starts that watch. A change made between the read (a GET) and the watch's first list
reaches the watch as a creation, which triggers nobody: a CR deferred on that GET would
wait the whole window with a drifted child. :class:`runner.operations.children.ChildWatch`
answers only once the watch has listed, and the spread runs the CR at once when it does
not list in time. Fakes stand in for the API server and the dependent informers.
"""

from __future__ import annotations

import random
import threading
from typing import Any, cast

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, Resource
from runner.operations import caches, children, needs
from runner.reconcile import startup
from runner.watch import dependents

CM = GVK("", "v1", "ConfigMap")
CONFIGMAPS = Resource(
    gvk=CM, plural="configmaps", namespaced=True, verbs=frozenset({"get", "list", "watch"}),
    subresources=frozenset(),
)  # fmt: skip
INPUTS = {"content": "sha256:c", "watch": "sha256:w", "runtime": "sha256:r"}
OWNER: KubeObject = {
    "apiVersion": "example.com/v1",
    "kind": "Echo",
    "metadata": {"name": "m", "namespace": "ns", "uid": "owner-uid", "generation": 2},
}


def echo(message: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "m-echo",
            "namespace": "ns",
            "uid": "cm-uid",
            "resourceVersion": "5",
            "labels": {"message": message},
        },
    }


class Server:
    """The API server's answer to a GET: the object as it is now."""

    def __init__(self, obj: KubeObject) -> None:
        self.obj = obj

    def resource(self, gvk: GVK) -> Resource:
        return CONFIGMAPS

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        return self.obj


class Informer:
    def __init__(self) -> None:
        self.resource = CONFIGMAPS
        self.synced = threading.Event()
        self.store: dict[str, KubeObject] = {}


class Dependents:
    """A dependent watch per kind, started by ``ensure``; ``on_start`` plays its list."""

    def __init__(self, on_start: Any = None) -> None:
        self.informer: Informer | None = None
        self._on_start = on_start

    def ensure(self, owner: object, resource: Resource, child: KubeObject) -> None:
        if self.informer is None:
            self.informer = Informer()
            if self._on_start is not None:
                threading.Thread(target=self._on_start, args=(self.informer,)).start()

    def caches(self, gvk: GVK) -> bool:
        return self.informer is not None

    def informers(self) -> list[Informer]:
        return [self.informer] if self.informer is not None else []

    def metadata(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        informer = self.informer
        if informer is None or not informer.synced.is_set():
            return None
        return informer.store.get(name)


class NoNeeds:
    def dependent(self, *_: object) -> None:
        return None


def recorded() -> KubeObject:
    """The CR after a run that wrote its echo ConfigMap with message "a"."""
    seen = startup.Children().for_watch(lambda: INPUTS)
    seen.begin("owner-uid")
    seen.saw("owner-uid", gvk=CM, obj=echo("a"))
    status = {
        "observedGeneration": 2,
        "conditions": [{"type": "Successful", "status": "True"}],
        startup.STATUS_FIELD: startup.record(seen.take("owner-uid")),
    }
    return {**OWNER, "status": status}


def first_delay(server: Server, watching: Dependents) -> float | None:
    held = caches.Caches()
    held.dependents = cast(dependents.DependentWatches, watching)
    reader = children.ChildWatch(
        client=cast(Client, server),
        record=startup.Children(),
        caches=held,
        needs=cast(needs.RuntimeNeeds, NoNeeds()),
    )
    spread = startup.Spread(window=100, rate=1, read=reader.read, rng=random.Random(7))
    return spread.for_watch(lambda: INPUTS).delay(recorded())


def test_a_change_between_the_get_and_the_first_list_runs_the_cr_at_once() -> None:
    server = Server(echo("a"))  # the GET still sees the recorded version

    def lists(informer: Informer) -> None:
        server.obj = echo("tampered")  # changed right after the GET, before the list
        informer.store["m-echo"] = server.obj
        informer.synced.set()

    got = first_delay(server, Dependents(on_start=lists))
    assert got is None, f"expected the drifted child to run the CR at once, got a delay of {got}"


def test_a_dependent_watch_that_never_lists_runs_the_cr_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(children, "SETTLE", 0.2)
    got = first_delay(Server(echo("a")), Dependents())
    assert got is None, f"expected no deferral on an unlisted dependent watch, got {got}"


def test_an_unchanged_child_still_waits_once_the_watch_has_listed() -> None:
    server = Server(echo("a"))

    def lists(informer: Informer) -> None:
        informer.store["m-echo"] = server.obj
        informer.synced.set()

    got = first_delay(server, Dependents(on_start=lists))
    assert got is not None and 10.0 <= got <= 100.0, (
        f"expected the unchanged CR to wait in [10, 100] s (the control), got {got}"
    )
