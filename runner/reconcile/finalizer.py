"""The watch's finalizer on its CRs: added before a run, removed once its deletion run succeeded.

Part of one reconcile (watch → queue → **reconcile** → ansible → status). With a
``finalizer:`` in watches.yaml, a live CR gets the finalizer's name in
``metadata.finalizers`` before its first run, so that its deletion waits for the
finalizer's run; when that run succeeds, the name is removed from the live CR (when it
is still the same CR: pinned to its uid) and the API server deletes it.
"""

from __future__ import annotations

import contextlib

from runner.config import entry
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import KubeObject


class Finalizer:
    """Adds and removes one watch's finalizer on its CRs."""

    def __init__(self, *, client: Client) -> None:
        self._client = client

    @staticmethod
    def present(obj: KubeObject, *, watch: entry.Watch) -> bool:
        """The watch has a finalizer and ``obj`` carries it."""
        finalizers = (obj.get("metadata") or {}).get("finalizers") or []
        return watch.finalizer is not None and watch.finalizer.name in finalizers

    def add(self, obj: KubeObject, *, watch: entry.Watch) -> KubeObject:
        """``obj`` with the finalizer added, as the API server returned it."""
        return self._set(obj, watch=watch, add=True)

    def remove(self, obj: KubeObject, *, watch: entry.Watch) -> None:
        """Remove the finalizer from the live CR, if it is still ``obj`` (same uid)."""
        meta = obj["metadata"]
        with contextlib.suppress(kube_errors.NotFoundError):
            live = self._client.get(watch.gvk, name=meta["name"], namespace=meta.get("namespace"))
            if live["metadata"].get("uid") == meta.get("uid"):
                self._set(live, watch=watch, add=False)

    def _set(self, obj: KubeObject, *, watch: entry.Watch, add: bool) -> KubeObject:
        assert watch.finalizer is not None
        name = watch.finalizer.name
        meta = obj["metadata"]
        current = list(meta.get("finalizers") or [])
        wanted = [*current, name] if add else [f for f in current if f != name]
        # resourceVersion makes this a compare-and-swap: a concurrent writer's change
        # to the list is not lost; the conflict surfaces as a retried reconcile.
        return self._client.patch(
            watch.gvk,
            name=meta["name"],
            namespace=meta.get("namespace"),
            body={"metadata": {"finalizers": wanted, "resourceVersion": meta["resourceVersion"]}},
        )
