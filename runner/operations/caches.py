"""The runner's caches: the informers of the watched kinds, and the reads served from them.

The caches runnable group (:mod:`runner.operations.runnables`): one informer per
watched kind and namespace (the primary informers, feeding the controllers' queues),
started before the election as controller-runtime's caches are, so a standby is
ready and takes over without relisting. Children's kinds are cached by the dependent
watches (:class:`runner.watch.dependents.DependentWatches`).

:class:`Caches` is also the one place reads are served from the caches: the
reconciler's lookup of its own kind (:meth:`Caches.lookup`) and the proxy's and the
webhooks' lookups of any cached kind (:meth:`Caches.get`, :meth:`Caches.holds`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from runner.kube.types import GVK, KubeObject, ObjectKey, Resource, make_key
from runner.operations import health
from runner.reconcile import reconciler
from runner.watch import budget, dependents, source


class Caches:
    """The primary informers by kind, the dependent watches, and their reads."""

    def __init__(self) -> None:
        self.primary: dict[GVK, list[source.Informer]] = {}
        # Set once built: the dependent watches need the proxy, whose reads need them.
        self.dependents: dependents.DependentWatches | None = None
        self.watchers: list[health.Watcher] = []  # primary informers and their threads
        self._built = threading.Event()  # readiness waits for every informer to be made

    def add(self, gvk: GVK, informers: Sequence[source.Informer]) -> None:
        self.primary[gvk] = list(informers)

    def built(self) -> None:
        """Every primary informer is made: readiness now waits for their first lists."""
        self._built.set()

    def synced(self) -> bool:
        # With no watches (a new project's empty watches.yaml) nothing is left to sync.
        informers = [i for group in self.primary.values() for i in group]
        return self._built.is_set() and all(i.synced.is_set() for i in informers)

    def namespaces(self, gvk: GVK) -> list[str | None]:
        """The namespaces ``gvk``'s primary informers watch (None: all)."""
        return [informer.namespace for informer in self.primary.get(gvk, [])]

    def lookup(self, gvk: GVK) -> reconciler.Cache:
        """The reconciler's read of one object of its own kind."""

        def find(key: ObjectKey) -> KubeObject | None:
            for informer in self.primary.get(gvk, []):
                if informer.synced.is_set():
                    found = informer.get(key)
                    if found is not None:
                        return found
            return None

        return find

    def get(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        """Reads for the proxy: primary kinds, then dependent kinds. Safe because a
        reconcile is triggered only after its informer's store took the triggering change."""
        if resource.gvk in self.primary:
            return self.lookup(resource.gvk)(make_key(namespace=namespace, name=name))
        if self.dependents is not None:
            return self.dependents.get(resource, namespace, name)
        return None

    def metadata(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        """A dependent child's current metadata from a synced store (slim copies too), for
        the start-up spread's check of recorded children; None: read it from the server."""
        if self.dependents is None:
            return None
        return self.dependents.metadata(resource, namespace, name)

    def holds(self, gvk: GVK) -> bool:
        """Whether an informer of the runner holds ``gvk`` (primary or dependent kind)."""
        if gvk in self.primary:
            return True
        return self.dependents is not None and self.dependents.caches(gvk)

    def held(self) -> list[tuple[GVK, budget.Held]]:
        """What each informer (primary and dependent) holds, for the metrics."""
        informers = [i for group in self.primary.values() for i in group]
        if self.dependents is not None:
            informers += self.dependents.informers()
        return [(informer.resource.gvk, informer.held()) for informer in informers]

    def start(self, stop: threading.Event) -> bool:
        for gvk, informers in self.primary.items():
            for informer in informers:
                thread = threading.Thread(
                    target=informer.run,
                    args=(stop,),
                    name=f"informer-{gvk.kind.lower()}-{informer.namespace or 'all'}",
                    daemon=True,
                )
                thread.start()
                self.watchers.append(health.Watcher(informer=informer, thread=thread))
        return True

    def stop(self, *, deadline: float, clean: bool) -> bool:
        return True  # the stop event ends every informer's loop
