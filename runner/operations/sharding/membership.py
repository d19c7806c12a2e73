"""Shard membership: one coordination.k8s.io/v1 Lease per replica.

Sits beside the queue (watch → **queue** → reconcile → ansible → status), under
:mod:`runner.operations.sharding.shards`, which decides ownership from what this module
reads. Each replica of a shard group holds a Lease named ``<group>-<replica>``
in the operator's namespace, labelled ``playbook-operator.io/shard-group``,
whose ``holderIdentity`` is the replica's incarnation (replica id plus a random
suffix, new at every start) and whose ``playbook-operator.io/shard-view``
annotation is the membership view the replica acts on: the sorted replica ids
it hashes keys over. The replica claims exactly the keys that view gives it.

Only the replica writes its own Lease; every write carries the last
resourceVersion, so a second process with the same replica id is noticed
(:class:`LeaseHeldError`) instead of silently sharing the Lease.

Every call takes a ``timeout``: the gate passes the time left before its renew
deadline, as client-go bounds Lease requests, so a request to a silent API
server fails by then instead of after the client's default 30 s read timeout.
It bounds the whole call, however many requests it makes.
"""

from __future__ import annotations

import contextlib
import math
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.transport import Query
from runner.kube.types import GVK, KubeObject

LEASE = GVK("coordination.k8s.io", "v1", "Lease")
GROUP_LABEL = "playbook-operator.io/shard-group"
REPLICA_LABEL = "playbook-operator.io/shard-replica"
VIEW_ANNOTATION = "playbook-operator.io/shard-view"


class LeaseHeldError(Exception):
    """This replica's Lease is held by another incarnation (a duplicate replica id).

    Never leaves the package: :meth:`runner.operations.sharding.Shards.run` turns it into
    the manager's ``on_fenced`` call, which stops the process."""


@dataclass(frozen=True)
class Member:
    """One replica's Lease as read."""

    replica: str
    holder: str  # the incarnation renewing it
    renewed: str  # spec.renewTime: changes at every renewal
    duration: float  # spec.leaseDurationSeconds
    view: tuple[str, ...] | None  # the published view; None before the first publication
    resource_version: str = ""


_REPLICA = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def replica_problem(replica: str) -> str | None:
    """Why ``replica`` cannot name a shard member (None when it can): it becomes a label
    value and part of a Lease name, and views list replica ids separated by commas."""
    if not replica:
        return "empty"
    if len(replica) > 63:
        return "longer than 63 characters"
    if not _REPLICA.match(replica):
        return "not lower-case letters, digits, '-' and '.', starting and ending alphanumeric"
    return None


def incarnation(replica: str) -> str:
    """A holder identity unique to this process: the replica id and a random suffix."""
    return f"{replica}_{secrets.token_hex(4)}"


def encode_view(view: tuple[str, ...]) -> str:
    return ",".join(view)


def decode_view(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(part for part in text.split(",") if part)


class Leases(Protocol):
    """The Lease operations the shard gate needs (the cluster, or a fake in tests)."""

    holder: str  # this process's incarnation, the holderIdentity of its Lease

    def write(self, *, view: tuple[str, ...], take_over: bool = False, timeout: float) -> None:
        """Create or renew this replica's Lease publishing ``view``.

        Raises :class:`LeaseHeldError` when another incarnation holds it (unless
        ``take_over``), :class:`runner.kube.errors.KubeError` when the write failed
        or did not complete within ``timeout`` seconds.
        """

    def read(self, *, timeout: float) -> list[Member]:
        """Every Lease of the shard group, this replica's included."""

    def release(self, *, timeout: float) -> None:
        """Delete this replica's Lease, if this incarnation still holds it."""

    def remove(self, member: Member, *, timeout: float) -> None:
        """Delete another replica's expired Lease, unless it changed since read."""


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_name(group: str, replica: str) -> str:
    return f"{group}-{replica}"


class KubeLeases:
    """:class:`Leases` on the cluster, through the runner's client."""

    def __init__(
        self,
        *,
        client: Client,
        namespace: str,
        group: str,
        replica: str,
        holder: str,
        duration: float,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.group = group
        self.replica = replica
        self.holder = holder
        self.name = lease_name(group, replica)
        self._duration = max(1, math.ceil(duration))
        self._resource_version = ""

    def _body(self, view: tuple[str, ...], *, acquired: str) -> KubeObject:
        now = _micro_time()
        return {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {GROUP_LABEL: self.group, REPLICA_LABEL: self.replica},
                "annotations": {VIEW_ANNOTATION: encode_view(view)},
            },
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": self._duration,
                "acquireTime": acquired or now,
                "renewTime": now,
            },
        }

    # -- requests: each call bounded as a whole by its timeout ------------------

    def _path(self, name: str = "") -> str:
        base = f"/apis/{LEASE.group}/{LEASE.version}/namespaces/{self.namespace}/leases"
        return f"{base}/{name}" if name else base

    def _request(
        self,
        method: str,
        path: str,
        *,
        until: float,
        body: object = None,
        query: Query | None = None,
    ) -> KubeObject:
        left = until - time.monotonic()
        if left <= 0:
            raise kube_errors.TransportError(f"{method} {path}: out of time (renew deadline)")
        answer: KubeObject = self._client.request(
            method, path, body=body, query=query, timeout=left
        )
        return answer

    def _create(self, view: tuple[str, ...], *, until: float) -> None:
        created = self._request(
            "POST", self._path(), body=self._body(view, acquired=""), until=until
        )
        self._resource_version = str(created["metadata"].get("resourceVersion", ""))

    def write(self, *, view: tuple[str, ...], take_over: bool = False, timeout: float) -> None:
        until = time.monotonic() + timeout
        if not self._resource_version:
            try:
                self._create(view, until=until)
            except kube_errors.ConflictError:
                pass  # it exists: a restart with the same replica id; check its holder below
            else:
                return
        for _ in range(2):
            if not self._resource_version:
                current = self._request("GET", self._path(self.name), until=until)
                holder = (current.get("spec") or {}).get("holderIdentity")
                if holder != self.holder and not take_over:
                    raise LeaseHeldError(f"Lease {self.namespace}/{self.name} is held by {holder}")
                self._resource_version = str(current["metadata"].get("resourceVersion", ""))
            body = self._body(view, acquired="")
            body["metadata"]["resourceVersion"] = self._resource_version
            try:
                updated = self._request("PUT", self._path(self.name), body=body, until=until)
            except kube_errors.ConflictError:
                self._resource_version = ""  # changed by someone else: look at it again
                take_over = False
                continue
            except kube_errors.NotFoundError:
                self._resource_version = ""  # deleted under us: create it again
                self._create(view, until=until)
                return
            self._resource_version = str(updated["metadata"].get("resourceVersion", ""))
            return
        raise kube_errors.KubeError(f"Lease {self.namespace}/{self.name}: conflicting writes")

    def read(self, *, timeout: float) -> list[Member]:
        listed = self._request(
            "GET",
            self._path(),
            query={"labelSelector": f"{GROUP_LABEL}={self.group}"},
            until=time.monotonic() + timeout,
        )
        members: list[Member] = []
        for item in listed.get("items") or []:
            meta = item.get("metadata") or {}
            spec = item.get("spec") or {}
            replica = (meta.get("labels") or {}).get(REPLICA_LABEL)
            if not replica:
                continue
            members.append(
                Member(
                    replica=str(replica),
                    holder=str(spec.get("holderIdentity") or ""),
                    renewed=str(spec.get("renewTime") or ""),
                    duration=float(spec.get("leaseDurationSeconds") or self._duration),
                    view=decode_view((meta.get("annotations") or {}).get(VIEW_ANNOTATION)),
                    resource_version=str(meta.get("resourceVersion") or ""),
                )
            )
        return members

    def _delete(self, name: str, resource_version: str, *, timeout: float) -> None:
        self._request(
            "DELETE",
            self._path(name),
            body={"preconditions": {"resourceVersion": resource_version}},
            until=time.monotonic() + timeout,
        )

    def release(self, *, timeout: float) -> None:
        if not self._resource_version:
            return
        with contextlib.suppress(kube_errors.NotFoundError):
            self._delete(self.name, self._resource_version, timeout=timeout)
        self._resource_version = ""

    def remove(self, member: Member, *, timeout: float) -> None:
        # Gone already, or renewed since (not expired after all): nothing to do.
        with contextlib.suppress(kube_errors.NotFoundError, kube_errors.ConflictError):
            self._delete(
                lease_name(self.group, member.replica), member.resource_version, timeout=timeout
            )
