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

The rebuild walks without recursion, and it is also where the informer learns how
deep an object nests, since it visits every container of every object stored: one
deeper than :data:`MAX_DEPTH` levels raises :class:`TooDeepError` and is not held (the
informer skips it as it skips an undecodable one, :mod:`runner.watch.skips`).
``json.loads`` decodes objects of up to about 990 levels, but what the runtime does
with a held object is recursive in places (``==`` between versions in the
predicates, ``json.dumps`` for the proxy's cache reads and the store's size,
``copy.deepcopy``): Python's 1000 frames must hold the object's nesting, twice for
``deepcopy``, above whatever stack the thread already has. No real object nests
near the bound, and a primary deeper than 98 levels is refused by the Ansible guard
anyway (:mod:`runner.ansible.extravars`), with a Failure condition.
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
#: Levels of nesting an object may have to be held (the object itself is level 1).
MAX_DEPTH = 256


class TooDeepError(ValueError):
    """An object nests deeper than :data:`MAX_DEPTH` levels: the informer does not hold it."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the object nests deeper than {limit} levels")
        self.limit = limit


class SharedStrings:
    """One informer's table of shared strings; used from the informer's thread only."""

    def __init__(self) -> None:
        self._table: dict[str, str] = {}
        self.emptied = 0  # how often the table was full (for tests and debugging)

    def __len__(self) -> int:
        return len(self._table)

    def compact(self, obj: KubeObject, *, held: int, max_depth: int = MAX_DEPTH) -> KubeObject:
        """``obj`` rebuilt with shared keys and short string values; ``held``: objects
        the store holds now, which bounds the table. Raises :class:`TooDeepError` when
        ``obj`` nests deeper than ``max_depth`` levels."""
        if len(self._table) > max(FLOOR, PER_OBJECT * held):
            self._table.clear()
            self.emptied += 1
        shared: KubeObject = self._share(obj, max_depth=max_depth)
        return shared

    def _share(self, value: Any, *, max_depth: int) -> Any:
        """``value`` rebuilt without recursion: each container is made empty where it
        belongs, then filled when its turn comes (so dict order is kept)."""
        kind = type(value)
        if kind is not dict and kind is not list:
            return self._leaf(value)
        table = self._table
        root: Any = {} if kind is dict else []
        pending: list[tuple[Any, Any, int]] = [(value, root, 1)]  # (source, copy, level)
        child: Any
        while pending:
            source, copy, level = pending.pop()
            if level > max_depth:
                raise TooDeepError(max_depth)
            if type(source) is dict:
                for name, item in source.items():
                    key = table.setdefault(name, name)
                    item_kind = type(item)
                    if item_kind is dict or item_kind is list:
                        copy[key] = child = {} if item_kind is dict else []
                        pending.append((item, child, level + 1))
                    elif item_kind is str and len(item) <= MAX_VALUE:
                        copy[key] = table.setdefault(item, item)
                    else:
                        copy[key] = item
            else:
                for item in source:
                    item_kind = type(item)
                    if item_kind is dict or item_kind is list:
                        child = {} if item_kind is dict else []
                        copy.append(child)
                        pending.append((item, child, level + 1))
                    elif item_kind is str and len(item) <= MAX_VALUE:
                        copy.append(table.setdefault(item, item))
                    else:
                        copy.append(item)
        return root

    def _leaf(self, value: Any) -> Any:
        if type(value) is str and len(value) <= MAX_VALUE:
            return self._table.setdefault(value, value)
        return value
