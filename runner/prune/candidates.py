"""Which of a CR's children a successful run leaves to be pruned: pure functions of objects.

Part of pruning (see the package docstring). The pruner lists the children's kinds;
here the decision is made on what it read: owned by reference to the CR's uid, not
being deleted already, and not touched by the run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from runner.kube.types import GVK, KubeObject

#: On a CR: ``"false"`` turns pruning off for it (any other value, or none: the watch's).
ANNOTATION = "playbook-operator.io/prune"
#: Kinds never pruned, as ``Kind.group``: Events a role records about its CR are owned by
#: it (garbage-collected with it) but are records, not something the role makes each run.
NEVER = frozenset({"Event", "Event.events.k8s.io"})


@dataclass(frozen=True, order=True)
class Ref:
    """One child: kind and place, as the run's record names it."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def gvk(self) -> GVK:
        return GVK.of({"apiVersion": self.api_version, "kind": self.kind})

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


def wanted(cr: KubeObject) -> bool:
    """Whether the CR lets its children be pruned (the annotation is not ``"false"``)."""
    meta = cr.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    value = notes.get(ANNOTATION) if isinstance(notes, dict) else None
    return value is None or str(value).strip().lower() != "false"


def owned_by(child: KubeObject, *, uid: str) -> bool:
    """Whether ``child`` names the CR of ``uid`` in its ownerReferences."""
    refs = (child.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(ref, dict) and ref.get("uid") == uid for ref in refs)


def prunable(gvk: GVK, *, skip: Collection[GVK]) -> bool:
    """Whether children of ``gvk`` may be pruned: not an Event, not in the watch's blacklist."""
    return gvk.group_kind not in NEVER and gvk.group_kind not in {g.group_kind for g in skip}


def stale(
    listed: Iterable[KubeObject], *, gvk: GVK, uid: str, touched: Collection[Ref]
) -> list[tuple[Ref, str]]:
    """The children of kind ``gvk`` among ``listed`` to delete, each with its uid."""
    out = []
    for child in listed:
        meta = child.get("metadata") or {}
        if not owned_by(child, uid=uid) or meta.get("deletionTimestamp") or not meta.get("uid"):
            continue
        ref = Ref(
            api_version=gvk.api_version,
            kind=gvk.kind,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name", "")),
        )
        if ref not in touched:
            out.append((ref, str(meta["uid"])))
    return sorted(out)
