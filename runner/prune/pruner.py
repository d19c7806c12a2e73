"""The pruning step: list the kinds a watch's runs touch, delete the children a run left out.

Part of pruning (see the package docstring). One :class:`Pruner` per watch; the reconciler
calls :meth:`Pruner.prune` after a successful run, before the final status write, with what
the run touched through the proxy. The kinds looked at are those this run touched, those
earlier runs of the watch touched in this process, and those of the CR's last successful
run (``status.reconciledChildren``), so a kind the role stopped making altogether is
still pruned, after a restart too. Lists and deletes go straight to the API server with
the operator's credentials; a kind that cannot be listed is skipped and logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable

from runner.base import logs
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.prune import candidates
from runner.status import recorder

log = logging.getLogger("runner.prune")

#: The status key the reconciler records a successful run's children under
#: (runner.reconcile.startup.STATUS_FIELD): the kinds of the CR's previous run.
RECORD_FIELD = "reconciledChildren"
_MAX_KINDS = 256  # kinds remembered per watch


class Pruner:
    """Deletes the children a watch's successful runs no longer make."""

    def __init__(self, *, client: Client, events: recorder.Recorder | None) -> None:
        self._client = client
        self._recorder = events
        self._lock = threading.Lock()
        self._kinds: dict[GVK, None] = {}  # every child kind a run of the watch touched

    def prune(
        self,
        cr: KubeObject,
        *,
        touched: Collection[candidates.Ref],
        skip: Collection[GVK] = (),
        log: logs.BoundLogger,
    ) -> list[candidates.Ref]:
        """Delete ``cr``'s owned children of the watch's kinds that are not in ``touched``
        (what the successful run that just ended touched), but of kinds in ``skip`` (the
        watch's blacklist) or Events; returns those deleted."""
        kinds = self._learn(touched, recorded=_recorded(cr))
        if not candidates.wanted(cr):
            log.debug("pruning off for this CR", extra={"annotation": candidates.ANNOTATION})
            return []
        deleted: list[candidates.Ref] = []
        for gvk in (k for k in kinds if candidates.prunable(k, skip=skip)):
            for ref, child_uid in self._stale(cr, gvk=gvk, touched=touched, log=log):
                if self._delete(ref, uid=child_uid, log=log):
                    deleted.append(ref)
                    self._report(cr, ref, log=log)
        return deleted

    def _learn(
        self, touched: Iterable[candidates.Ref], *, recorded: Iterable[candidates.Ref]
    ) -> list[GVK]:
        with self._lock:
            for ref in [*touched, *recorded]:
                if ref.kind and ref.api_version:
                    self._kinds[ref.gvk] = None
            while len(self._kinds) > _MAX_KINDS:
                self._kinds.pop(next(iter(self._kinds)))
            return list(self._kinds)

    def _stale(
        self,
        cr: KubeObject,
        *,
        gvk: GVK,
        touched: Collection[candidates.Ref],
        log: logs.BoundLogger,
    ) -> list[tuple[candidates.Ref, str]]:
        """The children of ``gvk`` to delete. Owner references name an owner in the
        child's namespace (or a cluster-scoped one), so a namespaced CR's are listed in
        its namespace; a cluster-scoped CR's in the namespaces its runs touched them."""
        meta = cr["metadata"]
        try:
            namespaced = self._client.resource(gvk).namespaced
        except kube_errors.KubeError as exc:
            log.warning("pruning: kind not served", extra={"kind": str(gvk), "error": str(exc)})
            return []
        owner_namespace = str(meta.get("namespace") or "")
        if not namespaced:
            places: set[str | None] = {None} if not owner_namespace else set()
        elif owner_namespace:
            places = {owner_namespace}
        else:
            places = {ref.namespace for ref in touched if ref.gvk == gvk and ref.namespace}
        stale: list[tuple[candidates.Ref, str]] = []
        for namespace in sorted(places, key=str):
            try:
                listed = self._client.list(gvk, namespace=namespace)
            except kube_errors.KubeError as exc:
                log.warning("pruning: cannot list", extra={"kind": str(gvk), "error": str(exc)})
                continue
            items = [i for i in listed.get("items") or [] if isinstance(i, dict)]
            uid = str(meta.get("uid", ""))
            stale += candidates.stale(items, gvk=gvk, uid=uid, touched=touched)
        return stale

    def _delete(self, ref: candidates.Ref, *, uid: str, log: logs.BoundLogger) -> bool:
        """Delete one child, pinned to its uid, its dependents in the background."""
        path = self._client.resource(ref.gvk).path(namespace=ref.namespace or None, name=ref.name)
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            "preconditions": {"uid": uid},
        }
        try:
            self._client.request("DELETE", path, body=options)
        except (kube_errors.NotFoundError, kube_errors.ConflictError):
            return False  # gone already, or another object of that name now: not ours
        except kube_errors.KubeError as exc:
            log.warning(
                "pruning: cannot delete", extra={"child": ref.describe(), "error": str(exc)}
            )
            return False
        return True

    def _report(self, cr: KubeObject, ref: candidates.Ref, *, log: logs.BoundLogger) -> None:
        message = f"Deleted {ref.describe()}: the last successful run no longer makes it"
        log.info("pruned a child the run no longer makes", extra={"child": ref.describe()})
        if self._recorder is not None:
            self._recorder.record(cr, warning=False, reason=recorder.REASON_PRUNED, message=message)


def _recorded(cr: KubeObject) -> list[candidates.Ref]:
    """The children the CR's last successful run recorded (``apiVersion/kind/ns/name``)."""
    status = cr.get("status")
    record = status.get(RECORD_FIELD) if isinstance(status, dict) else None
    objects = record.get("objects") if isinstance(record, dict) else None
    out = []
    for text in objects if isinstance(objects, list) else []:
        parts = str(text).rsplit("/", 3)
        if len(parts) == 4 and all((parts[0], parts[1], parts[3])):
            out.append(candidates.Ref(parts[0], parts[1], parts[2], parts[3]))
    return out
