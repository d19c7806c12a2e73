"""An in-memory stand-in for the shard group's Leases, shared by several replicas.

Behaves like the API server for what the gate relies on: writes are seen by
every later read (linearisable), each renewal changes renewTime, a deleted
Lease is gone, and a write can be made to fail.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from runner.kube import errors as kube_errors
from runner.operations.sharding import membership

_COUNTER = itertools.count(1)


@dataclass
class Store:
    """The group's Leases by replica id."""

    leases: dict[str, membership.Member] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)  # replicas whose writes and reads fail


class FakeLeases:
    def __init__(self, store: Store, *, replica: str, duration: float) -> None:
        self.store = store
        self.replica = replica
        self.holder = membership.incarnation(replica)
        self.duration = duration

    def _check(self) -> None:
        if self.replica in self.store.failing:
            raise kube_errors.TransportError("connection refused")

    def write(self, *, view: tuple[str, ...], take_over: bool = False, timeout: float) -> None:
        self._check()
        current = self.store.leases.get(self.replica)
        if current is not None and current.holder != self.holder and not take_over:
            raise membership.LeaseHeldError(f"held by {current.holder}")
        self.store.leases[self.replica] = membership.Member(
            replica=self.replica,
            holder=self.holder,
            renewed=str(next(_COUNTER)),
            duration=self.duration,
            view=view,
            resource_version=str(next(_COUNTER)),
        )

    def read(self, *, timeout: float) -> list[membership.Member]:
        self._check()
        return [replace(m) for m in self.store.leases.values()]

    def release(self, *, timeout: float) -> None:
        current = self.store.leases.get(self.replica)
        if current is not None and current.holder == self.holder:
            del self.store.leases[self.replica]

    def remove(self, member: membership.Member, *, timeout: float) -> None:
        current = self.store.leases.get(member.replica)
        if current is not None and current.resource_version == member.resource_version:
            del self.store.leases[member.replica]
