"""Why a run happened: the trigger that travels with a key through the queue.

Flow: watch → **queue** → reconcile → ansible → status. Whoever enqueues a key
says why (a watch handler: created, spec changed, a dependent changed...; the
worker: requeue_after, retry, resync; dev mode, a shard or leader takeover). The
queue keeps one :class:`Trigger` per pending key; because adds coalesce, it
keeps the trigger that decides *when* the run happens — the first one, unless a
later add makes the key due sooner or raises its priority, which then takes
over — and counts in ``folded`` the others that were due (a resync or requeue
still in the future is no reason for this run: the run re-adds its own). The
reconcile then shows it in its log lines (``trigger``), the Running condition's
message, the run's artifacts (:data:`ARTIFACT`, a JSON file beside ansible-runner's
``status`` and ``rc``), and the ``trigger`` label of ``playbook_operator_runs_total``.

The trigger explains a run; it never steers one: reconciles stay level-based and
read everything fresh. Nothing here holds CR data beyond kind, namespace, name
and generation (no spec, no annotation values).

Imports nothing of the runtime: the queue, the watches, the reconciler and the
``runs`` tool all use it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Any

#: The file, in a run's artifact directory, that records why it ran and how it went.
ARTIFACT = "trigger.json"


class Kind(StrEnum):
    """The reasons a run happens (the metric's ``trigger`` label)."""

    CREATED = "created"  # a new object (an ADDED watch event)
    GENERATION = "generation"  # its spec changed (metadata.generation moved)
    ANNOTATION = "annotation"  # its annotations changed (watchAnnotationsChanges)
    DELETING = "deleting"  # deletionTimestamp set: the finalizer run
    DELETED = "deleted"  # the object is gone (nothing runs; its dir is removed)
    DEPENDENT = "dependent"  # a child changed, was deleted, or its readiness moved
    RESYNC = "resync"  # the reconcile period came round
    RESTART = "restart"  # first sight after start-up (the initial list)
    REQUEUE_AFTER = "requeue_after"  # the role asked with the requeue_after module
    RETRY = "retry"  # the previous run failed: backoff retry
    DEV_EDIT = "dev_edit"  # dev mode: the role or playbook changed on disk
    TAKEOVER = "takeover"  # a shard moved to this replica
    OTHER = "other"  # an enqueue that did not say why


_TEXT = {
    Kind.CREATED: "created",
    Kind.GENERATION: "spec changed",
    Kind.ANNOTATION: "annotations changed",
    Kind.DELETING: "deletion started",
    Kind.DELETED: "deleted",
    Kind.DEPENDENT: "dependent changed",
    Kind.RESYNC: "resync",
    Kind.RESTART: "restart",
    Kind.REQUEUE_AFTER: "requeue_after",
    Kind.RETRY: "retry after failure",
    Kind.DEV_EDIT: "dev-mode edit",
    Kind.TAKEOVER: "takeover",
    Kind.OTHER: "enqueued",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Trigger:
    """One reason to run; ``folded``: how many more were merged into the same run."""

    kind: Kind
    detail: str = ""  # e.g. "generation 3", "Deployment default/web", "after 30s"
    folded: int = 0

    def describe(self) -> str:
        """For people: ``spec changed: generation 3 (+2 more)``."""
        text = _TEXT[self.kind] + (f": {self.detail}" if self.detail else "")
        return text + (f" (+{self.folded} more)" if self.folded else "")

    def absorb(self) -> Trigger:
        """This trigger with one more folded into it."""
        return dataclasses.replace(self, folded=self.folded + 1)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "detail": self.detail, "folded": self.folded}


OTHER = Trigger(Kind.OTHER)


def dependent(*, kind: str, namespace: str, name: str, change: str) -> Trigger:
    """A child woke its owner; ``change``: ``changed``, ``deleted`` or ``readiness``."""
    where = f"{namespace}/{name}" if namespace else name
    return Trigger(Kind.DEPENDENT, f"{kind} {where} {change}")


def save(
    artifact_dir: Path,
    trigger: Trigger,
    *,
    started: float,
    seconds: float,
    result: str,
    failed_task: str | None,
) -> None:
    """Write :data:`ARTIFACT` into a finished run's artifact directory.

    ``started`` is seconds since 1970; ``result`` is ``succeeded`` or ``failed``;
    ``failed_task`` names the first failed task (its name, not its message, which may
    quote what the role read). Written atomically, so ``runs`` never reads half a file.
    """
    record = {
        "trigger": trigger.as_dict(),
        "started": round(started, 3),
        "seconds": round(seconds, 3),
        "result": result,
        "failed_task": failed_task,
    }
    part = artifact_dir / (ARTIFACT + ".part")
    part.write_text(json.dumps(record), encoding="utf-8")
    os.replace(part, artifact_dir / ARTIFACT)


def load(artifact_dir: Path) -> dict[str, Any] | None:
    """The record :func:`save` wrote, or None (no file, or not ours)."""
    try:
        data = json.loads((artifact_dir / ARTIFACT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
