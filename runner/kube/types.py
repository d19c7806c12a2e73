"""Value types shared by every layer: group/version/kind, object keys, raw JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NewType, TypedDict

#: A Kubernetes object as decoded JSON. Kept loose on purpose: CR specs are user data.
KubeObject = dict[str, Any]

#: "namespace/name" (or "name" for cluster-scoped objects): the queue's key.
ObjectKey = NewType("ObjectKey", str)


class WatchEvent(TypedDict):
    """One line of a watch stream."""

    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK | ERROR
    object: KubeObject


@dataclass(frozen=True, order=True)
class GVK:
    """A group/version/kind. ``group`` is ``""`` for the core API group."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """``Kind.group`` (``Kind`` for the core group), as operator-sdk annotations write it."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"

    @classmethod
    def of(cls, obj: KubeObject) -> GVK:
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        return cls(group=group, version=version, kind=str(obj.get("kind", "")))


@dataclass(frozen=True)
class Resource:
    """How a GVK is served over REST."""

    gvk: GVK
    plural: str
    namespaced: bool
    verbs: frozenset[str]
    subresources: frozenset[str]

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """REST path of the collection, or of one object when ``name`` is given."""
        base = f"/apis/{self.gvk.group}/{self.gvk.version}" if self.gvk.group else "/api/v1"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


def content(obj: KubeObject) -> dict[str, Any]:
    """All of ``obj`` but metadata and status: what a reconcile acts on. On a CRD without
    the status subresource a change to status bumps the generation too, so comparing
    this is how such a bump is told from a change to reconcile."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def object_key(obj: KubeObject) -> ObjectKey:
    meta = obj.get("metadata", {})
    return make_key(namespace=meta.get("namespace") or "", name=meta.get("name", ""))


def make_key(*, namespace: str, name: str) -> ObjectKey:
    return ObjectKey(f"{namespace}/{name}" if namespace else name)


def split_key(key: ObjectKey) -> tuple[str, str]:
    """Return ``(namespace, name)``; namespace is ``""`` for cluster-scoped keys."""
    namespace, _, name = key.rpartition("/")
    return namespace, name
