"""Status for custom resources the informers could not decode.

Flow: watch → (no queue, no reconcile) → **status**. An object nested deeper
than the runtime decodes (:mod:`runner.kube.decode`) is skipped by its
informer and never reconciled; this module tells its owner why, on the object
itself: the Failure condition of operator-sdk's ``markError``
(:func:`runner.status.conditions.mark_error`: Failure True, reason ``Failed``; Running and
Successful False), with ``observedGeneration``. The write is a JSON merge
patch of the status subresource sent WITHOUT reading the object first, and
its answer is not decoded: both would fail the same way. The conditions it
starts from are those the informer could still read; ``metadata.uid`` and
``resourceVersion`` in the patch make it conditional on that very version,
so a 409 means a newer version exists, which its informer judges again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from runner.kube import client as client_mod
from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject, ObjectKey, Resource, make_key
from runner.status import conditions

log = logging.getLogger("runner.rejection")

Owns = Callable[[GVK, ObjectKey], bool]


class Sender(Protocol):
    """The one call :func:`write` makes; :class:`runner.kube.client.Client` has it."""

    def send(
        self, method: str, path: str, *, body: Any, content_type: str | None = None
    ) -> None: ...


def message(reason: str) -> str:
    """The Failure condition's message for an object rejected because of ``reason``."""
    return f"the object could not be decoded: {reason}; it is not reconciled"


def write(client: Sender, *, resource: Resource, rejected: decode.Rejected, now: datetime) -> bool:
    """Mark ``rejected`` failed on its status; False when there was nothing to write.

    Nothing is written when the object, as read, already carries this Failure
    for its generation (the echo of our own write comes back rejected too).
    Raises the client's errors.
    """
    obj: KubeObject = rejected.obj
    meta = _meta(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return False
    text = message(rejected.reason)
    found = obj.get("status")
    current = found if isinstance(found, dict) and decode.intact(found) else {}
    raw = current.get("conditions")
    present = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    generation = meta.get("generation")
    failure = next((c for c in present if c.get("type") == conditions.FAILURE), None)
    if (
        failure is not None
        and failure.get("status") == "True"
        and failure.get("message") == text
        and current.get("observedGeneration") == generation
    ):
        return False
    patch: dict[str, Any] = {"conditions": conditions.mark_error(present, message=text, now=now)}
    if isinstance(generation, int):
        patch["observedGeneration"] = generation
    preconditions = {
        field: meta[field]
        for field in ("uid", "resourceVersion")
        if isinstance(meta.get(field), str)
    }
    path = resource.path(
        namespace=meta.get("namespace") if isinstance(meta.get("namespace"), str) else None,
        name=name,
        subresource="status",
    )
    client.send(
        "PATCH",
        path,
        body={"metadata": preconditions, "status": patch},
        content_type=client_mod.MERGE_PATCH,
    )
    return True


class Reporter:
    """Writes the Failure of rejected primary objects, once this runner may write.

    Informers start before leadership is won (a standby keeps warm caches), but
    only the leader writes, and in sharded mode only the replica owning the key
    (``owns``). Until :meth:`open`, the latest rejection of each object waits.
    Hooks run on informer threads.
    """

    def __init__(
        self,
        *,
        client: Sender,
        owns: Owns | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._owns = owns
        self._now = now
        self._lock = threading.Lock()
        self._open = False
        self._pending: dict[tuple[GVK, ObjectKey], tuple[Resource, decode.Rejected]] = {}

    def hook(self, resource: Resource) -> Callable[[decode.Rejected], None]:
        """The ``on_rejected`` callback for an informer of ``resource``'s primary kind."""

        def report(rejected: decode.Rejected) -> None:
            meta = _meta(rejected.obj)
            key = make_key(namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")))
            with self._lock:
                if not self._open:
                    self._pending[(resource.gvk, key)] = (resource, rejected)
                    return
            self._report(resource, key, rejected)

        return report

    def open(self) -> None:
        """Writes are allowed from now on (leading, workers started): flush what waited."""
        with self._lock:
            self._open = True
            pending, self._pending = self._pending, {}
        for (_, key), (resource, rejected) in pending.items():
            self._report(resource, key, rejected)

    def _report(self, resource: Resource, key: ObjectKey, rejected: decode.Rejected) -> None:
        if self._owns is not None and not self._owns(resource.gvk, key):
            return  # another replica's object (sharded mode): its informer reports it
        fields = {"kind": resource.gvk.kind, "object": key, "reason": rejected.reason}
        try:
            if write(self._client, resource=resource, rejected=rejected, now=self._now()):
                log.info("marked failed: the object could not be decoded", extra=fields)
        except kube_errors.NotFoundError:
            return  # deleted meanwhile
        except kube_errors.ConflictError:
            # A newer version exists; its event brings it back here if it is still bad.
            log.debug("status not written: the object changed", extra=fields)
        except kube_errors.KubeError as exc:
            log.warning(
                "status not written for an undecodable object", extra={**fields, "error": str(exc)}
            )


def _meta(obj: KubeObject) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
