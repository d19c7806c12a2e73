"""Dependent watches: a change to a child triggers a reconcile of its owner.

When the proxy sees a run create or read back a child it owns, the manager asks
this registry to watch that child's kind. One informer per child kind (per
watched namespace) serves every owner kind; its events pass the dependent
predicate (changes and deletions, not creations or status-only updates) and are
mapped to owner keys through ownerReferences or operator-sdk's primary-resource
annotations. An owner kind whose watch lists the child's kind under
``watchDependentReadiness`` also hears when the child's readiness changes
(``predicate.readiness_changed``: a Deployment becoming ready, or failing), so its
role need not poll while pods start; other owner kinds keep ignoring child status.
Blacklisted kinds are neither watched nor cached.
A child that cannot be decoded is skipped by its informer (logged, never
reported on: only primary objects get a Failure condition); a child whose
references cannot be read is logged and its other owner kinds still hear.
Their stores also serve the proxy's cached reads.

What they store is the cache budget (:mod:`runner.watch.budget`): only objects a
watched kind owns, without managedFields; Secrets without their data unless the
owner's watch sets ``cacheSecrets``; only objects its ``dependentSelector``
selects. Owner kinds that cache a child kind alike share one informer per
namespace; one with another selector or Secret setting gets informers of its own,
whose events reach only the owner kinds that cache alike.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from runner.config import entry
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, ObjectKey, Resource, make_key
from runner.proxy import ownership
from runner.queue import trigger, workqueue
from runner.watch import budget, predicate, source

log = logging.getLogger("runner.dependents")

Enqueue = Callable[[ObjectKey, workqueue.Priority, trigger.Trigger], None]


class DependentWatches:
    def __init__(
        self,
        *,
        client: Client,
        namespaces: tuple[str, ...],
        stop: threading.Event,
        watches_by_gvk: dict[GVK, entry.Watch],
        enqueue_for: dict[GVK, Enqueue],
        owner_namespaced: dict[GVK, bool],
        is_own_write: Callable[[KubeObject], bool] = lambda obj: False,
    ) -> None:
        self._client = client
        self._namespaces: list[str | None] = list(namespaces) or [None]
        self._stop = stop
        self._watches = watches_by_gvk
        self._enqueue_for = enqueue_for
        self._owner_namespaced = owner_namespaced
        self._is_own_write = is_own_write
        self._owners: dict[GVK, set[GVK]] = {}  # child kind → owner kinds
        self._keeps: dict[tuple[GVK, GVK], budget.Keep] = {}  # (child, owner) → how it caches
        self._informers: dict[GVK, list[source.Informer]] = {}  # every Keep's, per child kind
        self._started: set[tuple[GVK, budget.Keep]] = set()
        self._lock = threading.Lock()

    def get(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        """A whole child from a synced store, for a run's read (slim copies never)."""
        return self._find(resource, namespace, name, slim=False)

    def metadata(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        """A child from a synced store, slim copies too: its metadata is current (uid,
        generation, resourceVersion, owners), its body may not be there. None: not held
        (not synced yet, not owned by a watched kind, or not selected); ask the server."""
        return self._find(resource, namespace, name, slim=True)

    def _find(
        self, resource: Resource, namespace: str, name: str, *, slim: bool
    ) -> KubeObject | None:
        with self._lock:
            informers = list(self._informers.get(resource.gvk, []))
        key = make_key(namespace=namespace, name=name)
        for informer in informers:
            if informer.synced.is_set():
                found = informer.get(key)
                if found is not None and (slim or not budget.is_slim(found)):
                    return found
        return None

    def informers(self) -> list[source.Informer]:
        """Every dependent informer started so far (for the metrics)."""
        with self._lock:
            return [informer for group in self._informers.values() for informer in group]

    def caches(self, gvk: GVK) -> bool:
        """Whether a dependent watch of ``gvk`` runs (so its store can answer reads)."""
        with self._lock:
            return gvk in self._informers

    def ensure(self, owner: ownership.Owner, resource: Resource, child: KubeObject) -> None:
        """Watch ``resource`` for ``owner``'s kind, if the watch's settings allow it."""
        watch = self._watches.get(owner.gvk)
        if watch is None or not watch.watch_dependent_resources:
            return
        if resource.gvk in watch.blacklist or "watch" not in resource.verbs:
            return
        by_annotation = not any(
            ref.get("uid") == owner.uid
            for ref in (child.get("metadata") or {}).get("ownerReferences") or []
        )
        if by_annotation and not resource.namespaced and not watch.watch_cluster_scoped_resources:
            return
        keep = budget.Keep.of(
            label_selector=watch.dependent_selector.to_query(),
            child=resource.gvk,
            cache_secrets=watch.cache_secrets,
        )
        with self._lock:
            owners = self._owners.setdefault(resource.gvk, set())
            if owner.gvk in owners:
                return
            owners.add(owner.gvk)
            self._keeps[(resource.gvk, owner.gvk)] = keep
            if (resource.gvk, keep) in self._started:
                return
            self._started.add((resource.gvk, keep))
            transform = budget.transform(owner_kinds=frozenset(self._watches), keep=keep)
            informers = [
                source.Informer(
                    client=self._client,
                    resource=resource,
                    namespace=namespace,
                    handler=self._handler(resource.gvk, keep),
                    log=log,
                    label_selector=keep.label_selector,
                    transform=transform,
                )
                for namespace in (self._namespaces if resource.namespaced else [None])
            ]
            self._informers.setdefault(resource.gvk, []).extend(informers)
        log.info(
            "watching dependent kind", extra={"child": str(resource.gvk), "owner": str(owner.gvk)}
        )
        for informer in informers:
            threading.Thread(
                target=informer.run,
                args=(self._stop,),
                name=f"dependent-{resource.plural}",
                daemon=True,
            ).start()

    def _hears_readiness(self, owner_gvk: GVK, group_kind: str) -> bool:
        watch = self._watches.get(owner_gvk)
        return watch is not None and group_kind in watch.watch_dependent_readiness

    def _readiness_heard(self, group_kind: str) -> bool:
        """Whether any owner kind's watch lists ``group_kind`` under watchDependentReadiness."""
        return any(
            group_kind in watch.watch_dependent_readiness for watch in self._watches.values()
        )

    def _handler(self, child_gvk: GVK, keep: budget.Keep | None = None) -> source.Handler:
        """Events of ``child_gvk``'s informers that cache as ``keep`` (None: any) → owners."""
        group_kind = child_gvk.group_kind

        def handle(event: predicate.Event) -> None:
            changed = predicate.dependent(event)
            # A status-only update counts only if some watch asked for this kind's readiness.
            if not changed and not (
                self._readiness_heard(group_kind) and predicate.readiness_changed(event)
            ):
                return
            if event.type is predicate.EventType.MODIFIED and self._is_own_write(event.obj):
                return  # the echo of a write a run just made; reconciling again would loop
            with self._lock:
                owner_kinds = [
                    gvk
                    for gvk in self._owners.get(child_gvk, ())
                    if keep is None or self._keeps.get((child_gvk, gvk)) == keep
                ]
            failed: Exception | None = None
            for owner_gvk in owner_kinds:
                enqueue = self._enqueue_for.get(owner_gvk)
                if enqueue is None:
                    continue
                if not changed and not self._hears_readiness(owner_gvk, group_kind):
                    continue
                namespaced = self._owner_namespaced.get(owner_gvk, True)
                try:
                    keys = ownership.owner_keys(event.obj, owner_gvk)
                except Exception as exc:  # a malformed reference: the other owner kinds still hear
                    failed = failed or exc
                    continue
                for key in keys:
                    log.debug(
                        "dependent changed",
                        extra={
                            "event": event.type.value if changed else "READINESS",
                            "object": key,
                            "child": (event.obj.get("metadata") or {}).get("name"),
                        },
                    )
                    # A cluster-scoped owner's key has no namespace part. A readiness
                    # change continues the owner's earlier run, as its requeue_after would:
                    # it waits behind new and changed objects (resync priority).
                    meta = event.obj.get("metadata") or {}
                    why = trigger.dependent(
                        kind=child_gvk.kind,
                        namespace=meta.get("namespace") or "",
                        name=meta.get("name") or "",
                        change=(
                            "readiness"
                            if not changed
                            else "deleted"
                            if event.type is predicate.EventType.DELETED
                            else "changed"
                        ),
                    )
                    enqueue(
                        key if namespaced else ObjectKey(key.rpartition("/")[2]),
                        workqueue.Priority.EVENT if changed else workqueue.Priority.RESYNC,
                        why,
                    )
            if failed is not None:
                raise failed  # the informer logs it once, naming the child

        return handle
