"""Which watch events deserve a reconcile: operator-sdk's event filters.

Primary custom resources trigger on create and delete, and on updates only when
``metadata.generation`` changed (the spec), or on every update for kinds that
have no generation (e.g. Secret), and not when only status moved (a kind without the
status subresource bumps its generation on status writes). With ``watchAnnotationsChanges`` an
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

A watch may also ask to hear when a child's *readiness* changes
(``watchDependentReadiness``): whether the child is ``Current`` (its controller
has observed its spec and reached it), ``InProgress`` or ``Failed``, as
kstatus (sigs.k8s.io/cli-utils) computes it for Deployments, StatefulSets,
DaemonSets and ReplicaSets, and from a ``Ready`` condition for other kinds. A
role then need not poll while pods start, and a rollout costs two runs: the
one that changed the child, and the one after it became ready (or failed). Raw
status fields (``readyReplicas``...) would not do: they move several times in
one rollout, right after the run's own write too, and each move would cost a
run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from runner.kube import types as kube_types
from runner.kube.types import GVK, KubeObject
from runner.queue import trigger


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
    if new_gen == old_gen:
        return False
    # A kind without the status subresource bumps the generation on status writes too
    # (the runner's own): those are not a change to reconcile.
    return kube_types.content(event.obj) != kube_types.content(event.old)


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


def cause(event: Event) -> trigger.Trigger:
    """Why a primary event that passed :func:`primary` asks for a run (the run's trigger)."""
    if event.initial:
        return trigger.Trigger(trigger.Kind.RESTART, "first sight after start-up")
    if event.type is EventType.ADDED:
        return trigger.Trigger(trigger.Kind.CREATED)
    if event.type is EventType.DELETED:
        return trigger.Trigger(trigger.Kind.DELETED)
    if deletion_started(event):
        return trigger.Trigger(trigger.Kind.DELETING)
    generation = _meta(event.obj).get("generation")
    if generation_changed(event):
        detail = f"generation {generation}" if generation else "no generation: any update"
        return trigger.Trigger(trigger.Kind.GENERATION, detail)
    if annotations_changed(event):
        return trigger.Trigger(trigger.Kind.ANNOTATION)
    return trigger.OTHER


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


class Readiness(Enum):
    """Where a child's controller stands with its spec (kstatus' vocabulary)."""

    CURRENT = "Current"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"


def readiness(obj: KubeObject) -> Readiness:
    """kstatus' reading of ``obj``'s status, for the kinds it knows; else its Ready condition."""
    meta, spec, status = _meta(obj), _section(obj, "spec"), _section(obj, "status")
    listed = status.get("conditions")
    conditions = {
        str(c.get("type")): c
        for c in (listed if isinstance(listed, list) else [])
        if isinstance(c, dict)
    }
    progressing = conditions.get("Progressing") or {}
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        return Readiness.FAILED
    # The controller has not seen the latest spec yet (kinds without the field: no telling).
    if "observedGeneration" in status and _count(status, "observedGeneration") < _count(
        meta, "generation"
    ):
        return Readiness.IN_PROGRESS
    kind = GVK.of(obj).group_kind
    counts = _REPLICA_COUNTS.get(kind)
    if counts is not None:
        want = _count(spec, "replicas", default=1) if counts[0] == "" else _count(status, counts[0])
        done = all(_count(status, field) == want for field in counts[1:])
        if kind == "Deployment.apps":
            done = done and _count(status, "replicas") == want  # no old pod left
        if kind == "StatefulSet.apps" and status.get("updateRevision"):
            done = done and status.get("currentRevision") == status.get("updateRevision")
        return Readiness.CURRENT if done else Readiness.IN_PROGRESS
    ready = conditions.get("Ready")
    if ready is None or ready.get("status") == "True":
        return Readiness.CURRENT
    return Readiness.IN_PROGRESS


#: Per kind (``Kind.group``): where the wanted count is ("" for spec.replicas, else a
#: status field), and the status fields that must all reach it.
_REPLICA_COUNTS: dict[str, tuple[str, ...]] = {
    "Deployment.apps": ("", "updatedReplicas", "readyReplicas", "availableReplicas"),
    "ReplicaSet.apps": ("", "readyReplicas", "availableReplicas"),
    "StatefulSet.apps": ("", "readyReplicas", "updatedReplicas"),
    "DaemonSet.apps": (
        "desiredNumberScheduled",
        *("currentNumberScheduled", "updatedNumberScheduled", "numberReady", "numberAvailable"),
    ),
}


def readiness_changed(event: Event) -> bool:
    """Whether an update moved the child between Current, InProgress and Failed."""
    if event.type is not EventType.MODIFIED or event.old is None:
        return False
    return readiness(event.obj) is not readiness(event.old)


def _section(obj: KubeObject, name: str) -> dict[str, object]:
    value = obj.get(name)
    return dict(value) if isinstance(value, dict) else {}


def _count(section: dict[str, object], field: str, *, default: int = 0) -> int:
    """An integer field; absent (Kubernetes omits zeros) or malformed is ``default``."""
    value = section.get(field, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default
