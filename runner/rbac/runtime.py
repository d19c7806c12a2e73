"""What the runtime itself asks of the API server for one watch, whatever the role does.

The manager records these at start-up (and the dependent watches' list/watch as
they start), so a derived role keeps them: the informers' list/watch of the
primary kind (and the reconcile's fallback get), the conditions written to its
status (patch), the finalizer (patch of the primary), the owner references'
``blockOwnerDeletion`` check (update of ``<plural>/finalizers``), Events, and the
Leases of leader election or sharding.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from runner.rbac import rules

_LEASES = ("coordination.k8s.io", "leases")


def primary(
    *,
    group: str,
    plural: str,
    namespaces: Iterable[str],
    status: bool,
    finalizer: bool,
    owner_refs: bool,
) -> Iterator[rules.Use]:
    """The primary kind's needs; ``namespaces`` empty: all namespaces (or cluster-scoped)."""
    for namespace in list(namespaces) or [""]:
        for verb in ("get", "list", "watch"):
            yield rules.Use(group=group, resource=plural, verb=verb, namespace=namespace)
        if status:
            yield rules.Use(group, f"{plural}/status", "patch", namespace)
        if finalizer:
            yield rules.Use(group, plural, "patch", namespace)
        if owner_refs:
            yield rules.Use(group, f"{plural}/finalizers", "update", namespace)
        yield rules.Use("", "events", "create", namespace)


def dependent(*, group: str, plural: str, namespaces: Iterable[str]) -> Iterator[rules.Use]:
    """A dependent watch's informers: list and watch of the child kind."""
    for namespace in list(namespaces) or [""]:
        for verb in ("list", "watch"):
            yield rules.Use(group=group, resource=plural, verb=verb, namespace=namespace)


def leases(*, namespace: str, sharded: bool) -> Iterator[rules.Use]:
    """Leader election's Lease (get, create, update); sharding also lists and deletes."""
    group, resource = _LEASES
    verbs = ("get", "create", "update") + (("list", "delete") if sharded else ())
    for verb in verbs:
        yield rules.Use(group=group, resource=resource, verb=verb, namespace=namespace)
