"""Kubernetes Events on the custom resource: failed reconciles, recoveries, refusals.

``kubectl describe`` is where people look first; a Warning event names the
failing task, a Normal event says when the resource reconciled again. Events
are best effort: a failure to record one (RBAC, API hiccup) is logged, never
fails the reconcile.
"""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject

log = logging.getLogger("runner.recorder")

EVENT = GVK("", "v1", "Event")
COMPONENT = "playbook-operator"
REASON_FAILED = "ReconcileFailed"
REASON_RECOVERED = "ReconcileSucceeded"
REASON_WITHHELD = "SpecFieldsWithheld"
REASON_PRUNED = "Pruned"  # a child the last successful run no longer makes (runner.prune)
#: A CR annotation refused or clamped (runner.reconcile.overrides); recorded once per value.
REASON_ANNOTATION = "AnnotationOutOfBounds"
_MAX_MESSAGE = 1024  # the API server rejects event messages above 1 KiB


class Recorder:
    def __init__(self, client: Client, *, component: str = COMPONENT) -> None:
        self._client = client
        self._component = component
        self._instance = socket.gethostname()

    def record(self, obj: KubeObject, *, warning: bool, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event: KubeObject = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message[:_MAX_MESSAGE],
            "type": "Warning" if warning else "Normal",
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self._client.create(EVENT, event, namespace=namespace)
        except kube_errors.KubeError as exc:
            log.warning("could not record event", extra={"reason": reason, "error": str(exc)})


def failing(obj: KubeObject) -> bool:
    """Whether the object's last reconcile failed (its Failure condition is True)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Failure":
            return condition.get("status") == "True"
    return False
