"""The cache budget: what dependent informers keep, and how much every informer holds.

Part of the watch stage (watch → queue → reconcile → ansible → status). A
dependent informer lists and watches a child kind across the watched
namespaces, so without a budget the runner's memory follows the cluster (every
ConfigMap, every Secret, whole, managedFields included), not the operator's
work. :func:`transform` is applied to every object a dependent informer
receives, before it is stored and before its handler sees it:

- an object that no watched kind owns (no owner reference to, nor operator-sdk's
  primary-resource annotation naming, a kind of watches.yaml) is **not stored**:
  its events can enqueue nobody, and a run that reads it gets it from the API
  server (the proxy's cache lookup misses and forwards);
- an owned object is stored whole, managedFields and the last-applied annotation
  included: runs read these objects through the proxy's cache and must see what
  the API server would answer. ``kubernetes.core.k8s`` compares the object it
  read with its write's answer, which carries managedFields — a cached copy
  without them reads as a change on every run (the molecule scenario's "a
  reconcile with nothing to do changes nothing" caught it) — and client-side
  apply (``apply: true``) computes its patch from the annotation. Owned objects
  are few; what a cluster has many of is what nobody owns;
- an owned Secret is stored **slim** unless its watch sets ``cacheSecrets: true``:
  metadata (without managedFields and the last-applied annotation, which would
  repeat the data) plus a digest of everything else, so that a change of its
  data still reaches its owner while the data itself is never held. A slim
  object is never served to a run (:func:`is_slim`); the run's GET goes to the
  API server.

Every relist reads in pages of :data:`PAGE` objects (:func:`pages`), so a list of
many objects that will mostly not be stored never sits in memory whole.
:func:`measure` approximates what a store holds (objects, bytes of their compact
JSON) for the start-up log and the ``playbook_operator_informer_*`` metrics.

Imports only the kube client's types and :mod:`runner.proxy.ownership`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from runner.kube import decode
from runner.kube.client import Client
from runner.kube.transport import Query
from runner.kube.types import GVK, KubeObject
from runner.proxy import ownership

#: Objects per LIST page: the list's peak memory, not the kind's size, is what a relist costs.
PAGE = 500
#: The key a slim object carries instead of the fields it dropped (a digest of them).
SLIM = "playbook-operator.io/digest"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SECRET = GVK("", "v1", "Secret")

Transform = Callable[[KubeObject], KubeObject | None]


@dataclass(frozen=True)
class Keep:
    """How one owner kind's watch caches one child kind: the informer is shared by equals."""

    label_selector: str  # the watch's dependentSelector as a query ("": every object)
    whole: bool  # False: a Secret stored slim (no data); other kinds are always whole

    @classmethod
    def of(cls, *, label_selector: str, child: GVK, cache_secrets: bool) -> Keep:
        return cls(label_selector=label_selector, whole=child != SECRET or cache_secrets)


@dataclass(frozen=True)
class Held:
    """What a store holds: objects and the approximate bytes of their compact JSON."""

    objects: int
    bytes: int


def transform(*, owner_kinds: frozenset[GVK], keep: Keep) -> Transform:
    """The function a dependent informer applies to each object (None: do not store it)."""

    def apply(obj: KubeObject) -> KubeObject | None:
        if not any(ownership.owner_keys(obj, gvk) for gvk in owner_kinds):
            return None
        if keep.whole:
            return obj
        meta = dict(obj.get("metadata") or {})
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        digest = hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()
        return {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": meta,
            SLIM: digest,
        }

    return apply


def is_slim(obj: KubeObject) -> bool:
    """Whether ``obj`` is a slim copy (metadata only): never an answer to a run's read."""
    return SLIM in obj


def pages(client: Client, path: str, *, query: Query) -> Iterator[decode.Listing]:
    """LIST ``path`` in pages of :data:`PAGE` (one consistent snapshot, as the API server
    serves ``continue``); an expired continue token raises GoneError, which relists."""
    token = ""
    while True:
        paged: Query = {**query, "limit": PAGE}
        if token:
            paged["continue"] = token
        listing = client.list_objects(path, query=paged)
        yield listing
        token = str(listing.metadata.get("continue") or "")
        if not token:
            return


def measure(objects: Iterable[KubeObject]) -> Held:
    """Count ``objects`` and the length of their compact JSON (an approximation of memory)."""
    count = size = 0
    for obj in objects:
        count += 1
        size += len(json.dumps(obj, separators=(",", ":")))
    return Held(objects=count, bytes=size)
