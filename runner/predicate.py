"""Which watch events deserve a reconcile: operator-sdk's event filters.

Primary custom resources trigger on create and delete, and on updates only when
``metadata.generation`` changed (the spec), or on every update for kinds that
have no generation (e.g. Secret). With ``watchAnnotationsChanges`` an
annotation change also triggers. The watch's label selector applies to all of
them. Status-only and label-only updates never trigger, so the runner's own
status writes cannot loop.

Dependent (owned) resources trigger on update and delete but not on create,
and never on status-only updates (operator-lib's ``DependentPredicate``). Unlike
operator-lib, metadata that Kubernetes' own controllers write on a child —
annotations under ``kubernetes.io``/``k8s.io`` domains such as the Deployment
controller's ``deployment.kubernetes.io/revision``, and ``managedFields`` — does
not trigger either: it is not drift, and reacting to it cost every new
Deployment-owning CR a second run. A change to a child's spec, data, labels or
other annotations still does (drift repair).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from runner.kube.types import KubeObject


class EventType(Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class Event:
    type: EventType
    obj: KubeObject
    old: KubeObject | None = None  # the cached previous version, for MODIFIED
    initial: bool = False  # produced by a (re)list rather than the watch stream


Predicate = Callable[[Event], bool]


def _meta(obj: KubeObject | None) -> dict[str, object]:
    return dict((obj or {}).get("metadata") or {})


def generation_changed(event: Event) -> bool:
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    new_gen = _meta(event.obj).get("generation")
    old_gen = _meta(event.old).get("generation")
    if not new_gen:
        # No generation: every update counts (NoGeneration predicate).
        return True
    return new_gen != old_gen


def annotations_changed(event: Event) -> bool:
    if event.type is not EventType.MODIFIED or event.old is None:
        return False
    return _meta(event.obj).get("annotations") != _meta(event.old).get("annotations")


def deletion_started(event: Event) -> bool:
    """deletionTimestamp appeared: finalizers must run even though generation may not move."""
    if event.type is not EventType.MODIFIED or event.old is None:
        return False
    return bool(_meta(event.obj).get("deletionTimestamp")) and not _meta(event.old).get(
        "deletionTimestamp"
    )


def primary(
    *, watch_annotations: bool, selector_matches: Callable[[dict[str, str]], bool]
) -> Predicate:
    """The filter for a watch's own custom resources."""

    def accept(event: Event) -> bool:
        labels = dict(_meta(event.obj).get("labels") or {})  # type: ignore[call-overload]
        if not selector_matches(labels):
            return False
        if event.type is not EventType.MODIFIED:
            return True
        return (
            generation_changed(event)
            or deletion_started(event)
            or (watch_annotations and annotations_changed(event))
        )

    return accept


def controller_annotation(key: str) -> bool:
    """Whether an annotation key belongs to Kubernetes itself (``*.kubernetes.io/…``)."""
    prefix, slash, _ = key.partition("/")
    if not slash:
        return False
    return any(prefix == domain or prefix.endswith("." + domain) for domain in _K8S_DOMAINS)


_K8S_DOMAINS = ("kubernetes.io", "k8s.io")


def _without_status(obj: KubeObject | None) -> KubeObject:
    obj = dict(obj or {})
    obj.pop("status", None)
    meta = dict(obj.get("metadata") or {})
    for volatile in ("resourceVersion", "managedFields"):
        meta.pop(volatile, None)
    annotations = meta.get("annotations") or {}
    meta["annotations"] = {k: v for k, v in annotations.items() if not controller_annotation(k)}
    obj["metadata"] = meta
    return obj


def dependent(event: Event) -> bool:
    """The filter for owned children: changes and deletions, not creations or status."""
    if event.type is EventType.ADDED:
        return False
    if event.type is EventType.DELETED or event.old is None:
        return True
    return _without_status(event.obj) != _without_status(event.old)
