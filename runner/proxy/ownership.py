"""Who owns a child object: owner references, or operator-sdk's annotations.

Kubernetes garbage-collects children through ``ownerReferences``, but only
within one namespace (or under a cluster-scoped owner). For a child in another
namespace, or a cluster-scoped child of a namespaced owner, operator-sdk
records the owner in two annotations instead; dependent watches read both.

An owner is only ever given to a child its run creates (data safety: deleting
the custom resource garbage-collects what it owns). :func:`inject` marks a body
about to be created; :func:`adoption_patch` marks an object a server-side apply
just created; :func:`keep` lets a replace keep a mark the object already has.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.kube.types import GVK, KubeObject, ObjectKey, make_key

PRIMARY_RESOURCE = "operator-sdk/primary-resource"
PRIMARY_RESOURCE_TYPE = "operator-sdk/primary-resource-type"


@dataclass(frozen=True)
class Owner:
    """The custom resource a run reconciles."""

    gvk: GVK
    name: str
    namespace: str  # "" when cluster-scoped
    uid: str

    @classmethod
    def of(cls, obj: KubeObject) -> Owner:
        meta = obj["metadata"]
        return cls(
            gvk=GVK.of(obj),
            name=meta["name"],
            namespace=meta.get("namespace") or "",
            uid=meta["uid"],
        )

    def reference(self) -> dict[str, str]:
        # Like operator-sdk: no controller/blockOwnerDeletion, so no extra RBAC on the owner.
        return {
            "apiVersion": self.gvk.api_version,
            "kind": self.gvk.kind,
            "name": self.name,
            "uid": self.uid,
        }

    def annotations(self) -> dict[str, str]:
        return {
            PRIMARY_RESOURCE: f"{self.namespace}/{self.name}",
            PRIMARY_RESOURCE_TYPE: self.gvk.group_kind,
        }

    def owns(self, child: KubeObject) -> bool:
        meta = child.get("metadata") or {}
        if any(ref.get("uid") == self.uid for ref in meta.get("ownerReferences") or []):
            return True
        notes = meta.get("annotations") or {}
        return bool(
            notes.get(PRIMARY_RESOURCE) == f"{self.namespace}/{self.name}"
            and notes.get(PRIMARY_RESOURCE_TYPE) == self.gvk.group_kind
        )


def by_reference(owner: Owner, *, child_namespaced: bool, child_namespace: str) -> bool:
    """Whether an owner reference can name ``owner`` (operator-sdk's SupportsOwnerReference)."""
    return not owner.namespace or (child_namespaced and child_namespace == owner.namespace)


def inject(
    owner: Owner, child: KubeObject, *, child_namespaced: bool, child_namespace: str
) -> None:
    """Mark ``child`` as owned by ``owner``, in place."""
    meta = child.setdefault("metadata", {})
    if by_reference(owner, child_namespaced=child_namespaced, child_namespace=child_namespace):
        refs = meta.setdefault("ownerReferences", [])
        if not any(ref.get("uid") == owner.uid for ref in refs):
            refs.append(owner.reference())
    else:
        meta.setdefault("annotations", {}).update(owner.annotations())


def adoption_patch(
    owner: Owner, created: KubeObject, *, child_namespaced: bool, child_namespace: str
) -> KubeObject | None:
    """A JSON merge patch marking ``created`` as owned by ``owner`` (None: it already is).

    The patch names the object's uid and resourceVersion, so it applies only to
    exactly the version that was read: a conflict means someone else changed the
    object meanwhile, and the caller reads it again before deciding.
    """
    if owner.owns(created):
        return None
    meta = created.get("metadata") or {}
    patch: KubeObject = {
        "metadata": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    }
    if by_reference(owner, child_namespaced=child_namespaced, child_namespace=child_namespace):
        # A merge patch replaces the whole list: send the others unchanged.
        refs = [*(meta.get("ownerReferences") or []), owner.reference()]
        patch["metadata"]["ownerReferences"] = refs
    else:
        patch["metadata"]["annotations"] = owner.annotations()
    return patch


def keep(owner: Owner, replacement: KubeObject, live: KubeObject) -> bool:
    """On a replace of ``live``, carry ``owner``'s mark over into ``replacement``.

    Only a mark ``live`` already has is kept (never one added), and the replacement
    is pinned to ``live``'s uid, so it cannot land on another object of that name.
    True if ``replacement`` was changed.
    """
    if not owner.owns(live) or owner.owns(replacement):
        return False
    live_meta = live.get("metadata") or {}
    meta = replacement.setdefault("metadata", {})
    if meta.get("uid") not in (None, "", live_meta.get("uid")):
        return False  # the replace names another object; it will fail on its own
    meta["uid"] = live_meta.get("uid")
    kept = [ref for ref in live_meta.get("ownerReferences") or [] if ref.get("uid") == owner.uid]
    if kept:
        meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), *kept]
    notes = live_meta.get("annotations") or {}
    if all(notes.get(key) == value for key, value in owner.annotations().items()):
        meta.setdefault("annotations", {}).update(owner.annotations())
    return True


def owner_keys(child: KubeObject, owner_gvk: GVK) -> list[ObjectKey]:
    """Keys of the owners of kind ``owner_gvk`` that ``child`` names."""
    meta = child.get("metadata") or {}
    keys: list[ObjectKey] = []
    for ref in meta.get("ownerReferences") or []:
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        if ref.get("kind") == owner_gvk.kind and group == owner_gvk.group:
            # An owner reference always points into the child's namespace, or at a
            # cluster-scoped owner; the caller drops the namespace for the latter.
            keys.append(make_key(namespace=meta.get("namespace") or "", name=ref["name"]))
    notes = meta.get("annotations") or {}
    if notes.get(PRIMARY_RESOURCE_TYPE) == owner_gvk.group_kind and notes.get(PRIMARY_RESOURCE):
        namespace, _, name = str(notes[PRIMARY_RESOURCE]).rpartition("/")
        keys.append(make_key(namespace=namespace, name=name))
    return keys
