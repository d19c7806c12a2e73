"""Shared strings: an informer's stored objects hold one copy of each repeated string.

Part of the watch stage (**watch** → queue → reconcile → ansible → status). An
informer holds many objects of one kind, and they repeat the same strings: every
key (``metadata``, ``f:spec``, ``k:{"type":"Available"}``) and most short values
(``apps/v1``, manager names, ``Update``, condition types and reasons, images,
timestamps). ``json.loads`` shares keys only within one document: objects from one
LIST page share theirs, but each watch event brings its own copies, so without
this a store grows as its objects are updated, though it holds no more of them.

:class:`SharedStrings` rebuilds each object the informer stores with those strings
taken from a table of its own: every dict key, and every string value of at most
:data:`MAX_VALUE` characters. The table is not ``sys.intern``: interned strings are
immortal on some interpreters (free-threaded builds, 3.12.0 to 3.12.4), and values
such as resourceVersions are new on every update. It is bounded instead: past
:data:`PER_OBJECT` entries per held object (at least :data:`FLOOR`) it is emptied
and refilled from the next objects, which only costs some sharing for a while.

Measured on 2,000 objects of each kind as the API server serves them (managedFields
included), Python objects per object decoded one by one (watch events) / from LIST
pages / shared: Memcached Deployments (10.3 KB of JSON) 45.8 / 34.8 / 30.0 KiB,
Memcached CRs (3.8 KB) 19.8 / 15.5 / 12.2 KiB, Services (2.6 KB) 12.0 / 8.6 / 7.2
KiB. Rebuilding costs about 0.2 ms for such a Deployment, once per event stored.
"""

from __future__ import annotations

from typing import Any

from runner.kube.types import KubeObject

#: Longer string values are rarely repeated (annotations, last-applied JSON, data).
MAX_VALUE = 64
#: Table entries allowed per object the store holds before the table is emptied.
PER_OBJECT = 32
#: The table's allowance however few objects the store holds.
FLOOR = 4096


class SharedStrings:
    """One informer's table of shared strings; used from the informer's thread only."""

    def __init__(self) -> None:
        self._table: dict[str, str] = {}
        self.emptied = 0  # how often the table was full (for tests and debugging)

    def __len__(self) -> int:
        return len(self._table)

    def compact(self, obj: KubeObject, *, held: int) -> KubeObject:
        """``obj`` rebuilt with shared keys and short string values; ``held``: objects
        the store holds now, which bounds the table."""
        if len(self._table) > max(FLOOR, PER_OBJECT * held):
            self._table.clear()
            self.emptied += 1
        shared: KubeObject = self._share(obj)
        return shared

    def _share(self, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            table = self._table
            return {table.setdefault(k, k): self._share(v) for k, v in value.items()}
        if kind is list:
            return [self._share(item) for item in value]
        if kind is str and len(value) <= MAX_VALUE:
            return self._table.setdefault(value, value)
        return value
