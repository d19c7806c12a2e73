"""The writes runs make through the proxy: in flight, echoed back, read again.

Part of the Ansible ↔ API stage (see the package docstring). Three readers care
about a run's write, and all learn of it here:

- the dependent watches: the watch event of a version our runs wrote is an echo
  (:meth:`Writes.is_own_write`), which must not trigger yet another reconcile —
  and it may arrive before the write's answer, so writes in flight are counted;
- the run's own later reads (:meth:`Writes.behind`): until the cache holds the
  version the run wrote, they go to the API server;
- the request that writes: :class:`Write` does its bookkeeping from before the
  request is forwarded until the run may see the answer, settled once whichever
  way the request ends (answered, lost on the way, or turned into a stream).
"""

from __future__ import annotations

import collections
import contextlib
import json
import threading
import types
from collections.abc import Mapping
from typing import Any

from runner.kube import paths
from runner.kube.types import GVK, KubeObject, Resource
from runner.proxy import sessions

_OWN_WRITES_KEPT = 4096
_WRITE_WAIT = 5.0  # seconds an informer waits for an in-flight write's answer


class Writes:
    """What the runs of one proxy wrote: versions (echoes), writes in flight, per-run records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes_done = threading.Condition(self._lock)
        self._in_flight: collections.Counter[sessions.ObjectKey] = collections.Counter()
        # (uid, resourceVersion) of objects our runs wrote: their watch events are echoes
        # of our own changes and must not trigger yet another reconcile.
        self._own_writes: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()

    def begin(self, key: sessions.ObjectKey) -> None:
        with self._lock:
            self._in_flight[key] += 1

    def end(self, key: sessions.ObjectKey, payload: Any) -> None:
        """Forget the in-flight write; remember the version it produced."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        with self._lock:
            self._in_flight[key] -= 1
            if self._in_flight[key] <= 0:
                del self._in_flight[key]
            if isinstance(meta, dict) and meta.get("uid"):
                self._remember(meta)
            self._writes_done.notify_all()

    def record(self, session: sessions.Session, key: sessions.ObjectKey, payload: Any) -> None:
        """Note that ``session`` wrote ``key`` (``payload``: the answer, if it was the object)."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        version = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        with self._lock:
            session.written[key] = version

    def remember(self, payload: Any) -> None:
        """Note a version of an object our runs wrote (its watch event is an echo)."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        if isinstance(meta, dict) and meta.get("uid"):
            with self._lock:
                self._remember(meta)

    def _remember(self, meta: Mapping[str, Any]) -> None:
        self._own_writes[(str(meta["uid"]), str(meta.get("resourceVersion", "")))] = None
        while len(self._own_writes) > _OWN_WRITES_KEPT:
            self._own_writes.popitem(last=False)

    def is_own_write(self, obj: KubeObject) -> bool:
        """True if ``obj`` is exactly the version one of our runs wrote.

        The API server may deliver the watch event before the write's response
        reaches us; if a write to this object is in flight, wait for it (briefly).
        """
        meta = obj.get("metadata") or {}
        key = (GVK.of(obj), str(meta.get("namespace") or ""), str(meta.get("name", "")))
        version = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
        with self._lock:
            self._writes_done.wait_for(lambda: key not in self._in_flight, timeout=_WRITE_WAIT)
            return version in self._own_writes

    def behind(
        self, session: sessions.Session, key: sessions.ObjectKey, found: KubeObject
    ) -> str | None:
        """Why the cache's copy may predate a write of this run (None: it does not).

        Only the written version itself is known to be fresh enough: resource
        versions are opaque, so "newer than" cannot be told.
        """
        version = str((found.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if key in self._in_flight:
                return "being written"
            if key in session.written and session.written[key] != version:
                return "written by this run"
        return None


class Write(contextlib.AbstractContextManager["Write"]):
    """One request's write bookkeeping, settled once however the request ends.

    Entered before the request is forwarded: a write whose object can be told from
    the request is in flight (its watch echo waits for the answer). Then exactly one
    of: :meth:`answered` (before the run sees the answer, so its next read of the
    object is fresh and the echo is known), :meth:`lost` (the API server may or may
    not have done it), or leaving the block otherwise (a stream, an error): no longer
    in flight, nothing learnt. A request that writes nothing passes through.
    """

    def __init__(
        self,
        writes: Writes,
        session: sessions.Session,
        *,
        method: str,
        target: paths.Target | None,
        resource: Resource | None,
        body: bytes | None,
    ) -> None:
        self._writes = writes
        self._session = session
        self._deleting = method == "DELETE"
        self._in_flight = _write_key(method, target, resource, body)
        # What this run's later reads of the object must not take from a stale cache.
        self._written = self._in_flight
        if self._deleting and target and not target.subresource and resource and target.name:
            self._written = (resource.gvk, target.namespace, target.name)
        self._settled = False

    def __enter__(self) -> Write:
        if self._in_flight is not None:
            self._writes.begin(self._in_flight)
        return self

    def answered(self, *, status: int, payload: Any, dry_run: bool) -> None:
        """The API server answered ``status`` (``payload``: the object, if the answer was one)."""
        if self._settled:
            return
        succeeded = 200 <= status < 300
        if self._written is not None and succeeded and not dry_run:
            recorded = None if self._deleting else payload
            self._writes.record(self._session, self._written, recorded)
        self._settle(payload if succeeded else None)

    def lost(self) -> None:
        """The request did not get through whole: the write may or may not have happened."""
        if self._settled:
            return
        if self._written is not None:
            self._writes.record(self._session, self._written, None)
        self._settle(None)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self._settle(None)

    def _settle(self, payload: Any) -> None:
        if self._settled:
            return
        self._settled = True
        if self._in_flight is not None:
            self._writes.end(self._in_flight, payload)


def _write_key(
    method: str, target: paths.Target | None, resource: Resource | None, body: bytes | None
) -> sessions.ObjectKey | None:
    """Which object a mutating request writes, when it can be told before the answer."""
    if method not in ("POST", "PUT", "PATCH") or target is None or resource is None:
        return None
    if target.subresource and target.subresource != "status":
        return None
    name = target.name
    if not name and body:
        with contextlib.suppress(ValueError, AttributeError):
            name = str((json.loads(body).get("metadata") or {}).get("name") or "")
    return (resource.gvk, target.namespace, name) if name else None
