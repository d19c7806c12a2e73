"""What the runs' children start: a dependent watch of their kind, and the CR's record of them.

The owner-injecting proxy reports every child a run creates or reads back; the
start-up spread (:mod:`runner.reconcile.startup`) reads the children a CR's last
successful run recorded. Either way the child's kind gets a dependent watch
(:class:`runner.watch.dependents.DependentWatches`, held by
:class:`runner.operations.caches.Caches`) so a change to it reconciles its owner, the
child goes into the owner's ``status.reconciledChildren`` bookkeeping, and the list
and watch the runtime now makes is recorded (:mod:`runner.operations.needs`).
"""

from __future__ import annotations

import time

from runner.kube import client as client_mod
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject, Resource
from runner.operations import caches, needs
from runner.proxy import ownership
from runner.reconcile import startup

#: Seconds a start-up read waits, per child kind, for the kind's dependent watch to list.
SETTLE = 10.0


class ChildWatch:
    """Starts dependent watches for the children runs touch, and records them."""

    def __init__(
        self,
        *,
        client: client_mod.Client,
        record: startup.Children,
        caches: caches.Caches,
        needs: needs.RuntimeNeeds,
    ) -> None:
        self._client = client
        self._record = record  # what runs touched: status.reconciledChildren
        self._caches = caches
        self._needs = needs
        # Start-up reads: when each child kind's wait for its dependent list ends.
        self._deadlines: dict[GVK, float] = {}

    def saw(self, owner: ownership.Owner, resource: Resource, child: KubeObject) -> None:
        """A run of ``owner`` created or read ``child`` (the proxy's ``on_child``)."""
        self._record.saw(owner.uid, gvk=resource.gvk, obj=child)
        watching = self._caches.dependents
        if watching is not None:
            watching.ensure(owner, resource, child)
            if watching.caches(resource.gvk):  # a dependent watch lists and watches it
                self._needs.dependent(owner.gvk, resource)

    def read(self, child: startup.Child, owner: KubeObject) -> KubeObject | None:
        """A child a CR's last successful run recorded, read at start-up; its kind is
        watched from now on, as the run that touched it would have made it be, so a
        change while the CR waits for its spread run still triggers one.

        Once that watch has synced, its store answers (the spread compares metadata
        only, which slim copies keep): one list per kind instead of a GET per child. A
        change the store has not seen yet arrives as a watch event and runs the owner.
        A GET made before the watch listed could miss a change made before that list
        (the list delivers it as a creation, which triggers nobody): then the answer
        waits for the list (up to :data:`SETTLE` seconds per kind), else the read
        raises :class:`startup.Unsettled` and the CR runs at once."""
        gvk = GVK.of({"apiVersion": child.api_version, "kind": child.kind})
        resource = self._client.resource(gvk)
        listed = self._listed(gvk, wait=False)
        live = self._current(resource, child)
        if live is None:
            return None
        self.saw(ownership.Owner.of(owner), resource, live)
        if listed:
            return live
        if not self._listed(gvk, wait=True):
            raise startup.Unsettled(f"the dependent watch of {gvk.kind} has not listed yet")
        if not self._watched(gvk):
            return live  # no dependent watch of the kind: no list to race
        return self._current(resource, child)  # after the list: its store, else the server

    def _current(self, resource: Resource, child: startup.Child) -> KubeObject | None:
        live = self._caches.metadata(resource, child.namespace, child.name)
        if live is not None:
            return live
        try:
            return self._client.get(
                resource.gvk, name=child.name, namespace=child.namespace or None
            )
        except kube_errors.NotFoundError:
            return None

    def _watched(self, gvk: GVK) -> bool:
        watching = self._caches.dependents
        return watching is not None and watching.caches(gvk)

    def _listed(self, gvk: GVK, *, wait: bool) -> bool:
        """Whether every dependent informer of ``gvk`` has listed (True: none runs);
        ``wait``: up to the kind's deadline, set by its first wait."""
        watching = self._caches.dependents
        if watching is None:
            return True
        informers = [i for i in watching.informers() if i.resource.gvk == gvk]
        if not wait:
            return bool(informers) and all(i.synced.is_set() for i in informers)
        deadline = self._deadlines.setdefault(gvk, time.monotonic() + SETTLE)
        return all(i.synced.wait(max(0.0, deadline - time.monotonic())) for i in informers)
