"""What an informer does with one object it cannot take: one object never blinds it.

Part of the watch stage (**watch** → queue → reconcile → ansible → status), used by
:class:`runner.watch.source.Informer`. Two cases:

* an object that could not be decoded (:mod:`runner.kube.decode`), or that nests
  deeper than an informer holds (:mod:`runner.watch.strings`), in a LIST or a
  watch event: it is logged at error once per version (uid, generation, reason; a
  relist or a status write re-sends it, and then it is a debug line), the copy
  the store held is dropped (it is no longer the object), and ``on_rejected`` (the
  manager's hook that marks a primary CR failed) hears of it — unless the event
  deleted it;
* an object or event the informer or its handler could not process: one error
  log naming the object, and the stream goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from runner.kube import decode
from runner.kube.types import KubeObject, ObjectKey, Resource, make_key
from runner.watch import store

#: Told of each new version of an object that could not be decoded (not of deletions).
OnRejected = Callable[[decode.Rejected], None]


class Skips:
    """The objects one informer skipped as undecodable, and its error lines."""

    def __init__(
        self,
        *,
        resource: Resource,
        namespace: str | None,
        log: logging.Logger | logging.LoggerAdapter[logging.Logger],
        objects: store.Store,
        on_rejected: OnRejected | None,
    ) -> None:
        self._resource = resource
        self._namespace = namespace
        self._log = log
        self._store = objects
        self._on_rejected = on_rejected
        # Objects skipped as undecodable → (uid, generation, reason) last logged at error:
        # a relist or a status write re-sends them, and one error per version is enough.
        self._rejected: dict[ObjectKey, tuple[str, str, str]] = {}

    def keep_only(self, keys: set[ObjectKey]) -> None:
        """After a relist: only objects still undecodable stay remembered."""
        self._rejected = {k: v for k, v in self._rejected.items() if k in keys}

    def forget(self, key: ObjectKey) -> None:
        """``key`` was read whole again, or is gone."""
        self._rejected.pop(key, None)

    def unhandled(self, obj: Any, *, event: str, exc: Exception) -> None:
        """One object or event could not be processed: log it, naming the object."""
        meta = meta_of(obj)
        self._log.error(
            "event not handled",
            exc_info=exc,
            extra={
                **self._ident(),
                "kind": self._resource.gvk.kind,
                "object": _key_of(meta),
                "resourceVersion": str(meta.get("resourceVersion", "")),
                "event": event,
                "error": f"{type(exc).__name__}: {exc}",
            },
        )

    def reject(
        self, rejected: decode.Rejected, *, event: str
    ) -> tuple[ObjectKey | None, KubeObject | None]:
        """Skip an object that could not be decoded: its key if it has one, and, when
        ``event`` deleted it, the copy the store held (for a DELETED event)."""
        meta = meta_of(rejected.obj)
        rv = str(meta.get("resourceVersion", ""))
        fields = {
            **self._ident(),
            "kind": self._resource.gvk.kind,
            "object": _key_of(meta),
            "resourceVersion": rv,
            "event": event,
            "reason": rejected.reason,
        }
        if not isinstance(meta.get("name"), str) or not meta.get("name"):
            self._log.error("object skipped: it could not be decoded", extra=fields)
            return None, None
        key = make_key(namespace=str(meta.get("namespace") or ""), name=str(meta["name"]))
        previous = self._store.pop(key)  # the cached copy is no longer the object
        seen = (str(meta.get("uid", "")), str(meta.get("generation", "")), rejected.reason)
        if self._rejected.get(key) != seen:
            self._log.error("object skipped: it could not be decoded", extra=fields)
        else:
            self._log.debug("object skipped again: it could not be decoded", extra=fields)
        if event == "DELETED":
            self._rejected.pop(key, None)
            return key, previous
        self._rejected[key] = seen
        if self._on_rejected is not None:
            try:
                self._on_rejected(rejected)
            except Exception:
                self._log.exception("reporting an undecodable object failed", extra=fields)
        return key, None

    def _ident(self) -> dict[str, str]:
        return {"resource": self._resource.plural, "namespace": self._namespace or "*"}


def meta_of(obj: Any) -> dict[str, Any]:
    """``obj``'s metadata, or ``{}`` when it has none that reads as a mapping."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _key_of(meta: dict[str, Any]) -> str:
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return "<unnamed>"
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
