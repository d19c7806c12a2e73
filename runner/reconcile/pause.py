"""Pausing one custom resource with an annotation.

Flow: watch → queue → **reconcile**. A CR annotated
``playbook-operator.io/paused: "true"`` (the name lives in
:data:`runner.config.cr_annotations.PAUSED_ANNOTATION`) is read but not reconciled:
no finalizer is added, Ansible does not run, and a ``Paused`` condition (True,
reason Paused) says so. Deletion still works: a paused CR being deleted runs its
finalizer, since holding the deletion forever would be worse than running the
cleanup the user asked for by deleting. Removing the annotation (or setting it
to anything but "true") resumes: the change itself enqueues the CR, whatever
``watchAnnotationsChanges`` says, and the next run sets Paused to False.

Imports: config (the annotation's name) and watch.predicate (the event type).
"""

from __future__ import annotations

from runner.config import cr_annotations
from runner.kube.types import KubeObject
from runner.watch import predicate


def paused(obj: KubeObject | None) -> bool:
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(cr_annotations.PAUSED_ANNOTATION, "")).strip().lower() == "true"


def changed(event: predicate.Event) -> bool:
    """The event paused or resumed its object (worth a reconcile on its own)."""
    if event.type is not predicate.EventType.MODIFIED or event.old is None:
        return False
    return paused(event.obj) != paused(event.old)


def or_changed(inner: predicate.Predicate) -> predicate.Predicate:
    """``inner``, or a pause or resume: the primary watch's predicate."""

    def check(event: predicate.Event) -> bool:
        return inner(event) or changed(event)

    return check
