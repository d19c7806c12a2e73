"""An informer's store: the objects it holds by key, which doubles as the read cache.

Part of the watch stage (**watch** → queue → reconcile → ansible → status).
:class:`runner.watch.source.Informer` is its only writer, from its own thread;
reconciles and the proxy read single objects from it at the same time, so every
access takes the lock. Swapping in a fresh list is one step: a reader sees the
old objects or the new ones, never a mix.
"""

from __future__ import annotations

import threading

from runner.kube.types import KubeObject, ObjectKey


class Store:
    """Objects by key; thread-safe."""

    def __init__(self) -> None:
        self._objects: dict[ObjectKey, KubeObject] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    def get(self, key: ObjectKey) -> KubeObject | None:
        with self._lock:
            return self._objects.get(key)

    def objects(self) -> list[KubeObject]:
        """Every object held now (a copy of the list, not of the objects)."""
        with self._lock:
            return list(self._objects.values())

    def replace(self, fresh: dict[ObjectKey, KubeObject]) -> dict[ObjectKey, KubeObject]:
        """Hold ``fresh`` (a relist) instead of what was held; returns what was."""
        with self._lock:
            old, self._objects = self._objects, fresh
        return old

    def put(self, key: ObjectKey, obj: KubeObject | None) -> KubeObject | None:
        """Hold ``obj`` under ``key`` (None: hold nothing there); returns what was held."""
        with self._lock:
            previous = self._objects.get(key)
            if obj is None:
                self._objects.pop(key, None)
            else:
                self._objects[key] = obj
        return previous

    def pop(self, key: ObjectKey) -> KubeObject | None:
        """Stop holding ``key``; returns what was held."""
        with self._lock:
            return self._objects.pop(key, None)
