"""The custom resource a preview runs for: read from a file, matched to its watch.

Part of ``playbook-operator preview``. The file's apiVersion and kind pick the
watches.yaml entry (and so the role or playbook); its spec is what the role sees.
The CR need not exist: when it does, the live object is taken with the file's
spec, labels and annotations (so ``status`` and ``generation`` are the live
ones); when it does not, it is previewed as a new CR with a placeholder uid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.base import errors
from runner.config import entry
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject

#: The uid a CR that is not in the cluster is previewed with.
NEW_UID = "00000000-0000-0000-0000-000000000000"


class PreviewError(errors.ConfigError):
    """The CR file cannot be previewed: unreadable, not a CR, or no watch for its kind."""


@dataclass(frozen=True)
class Target:
    obj: KubeObject  # what the role sees
    watch: entry.Watch
    exists: bool

    @property
    def gvk(self) -> GVK:
        return self.watch.gvk

    @property
    def subject(self) -> str:
        meta = self.obj["metadata"]
        where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        return f"{self.gvk.api_version} {self.gvk.kind} {where}"

    @property
    def description(self) -> str:
        if self.watch.role is not None:
            return f"role {self.watch.role.name}"
        return f"playbook {self.watch.playbook}"


def read(path: Path) -> dict[str, Any]:
    """The one custom resource in ``path``."""
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    except OSError as exc:
        raise PreviewError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise PreviewError(f"{path}: invalid YAML: {exc}") from exc
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise PreviewError(f"{path}: expected one custom resource, saw {len(documents)} documents")
    obj = documents[0]
    meta = obj.get("metadata")
    if not obj.get("apiVersion") or not obj.get("kind"):
        raise PreviewError(f"{path}: apiVersion and kind are required")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise PreviewError(f"{path}: metadata.name is required")
    return obj


def watch_for(obj: KubeObject, *, loaded: Sequence[entry.Watch], path: Path) -> entry.Watch:
    gvk = GVK.of(obj)
    for watch in loaded:
        if watch.gvk == gvk:
            return watch
    known = ", ".join(f"{w.gvk.api_version} {w.gvk.kind}" for w in loaded)
    watched = f"watched: {known}" if known else "watches.yaml has no entries"
    raise PreviewError(f"{path}: no watch for {gvk.api_version} {gvk.kind} ({watched})")


def resolve(
    obj: KubeObject, *, watch: entry.Watch, client: Client, default_namespace: str
) -> Target:
    """The object the role sees: the live CR with the file's spec, or the file's as new."""
    meta = dict(obj["metadata"])
    namespaced = client.resource(watch.gvk).namespaced
    namespace = (meta.get("namespace") or default_namespace) if namespaced else ""
    try:
        live = client.get(watch.gvk, name=meta["name"], namespace=namespace or None)
    except kube_errors.NotFoundError:
        live = None
    if live is not None:
        merged = dict(live)
        merged["metadata"] = dict(live["metadata"])
        for key in ("labels", "annotations"):
            if key in meta:
                merged["metadata"][key] = meta[key]
        merged["spec"] = obj.get("spec", {})
        return Target(obj=merged, watch=watch, exists=True)
    new_meta = {
        k: v for k, v in meta.items() if k in ("name", "labels", "annotations", "finalizers")
    }
    # No resourceVersion yet: "" (modules that compare-and-swap read the key).
    new_meta.update(uid=NEW_UID, generation=1, resourceVersion="")
    if namespace:
        new_meta["namespace"] = namespace
    new = {**obj, "metadata": new_meta}
    new.pop("status", None)
    return Target(obj=new, watch=watch, exists=False)
