"""Which replicas of a shard group are alive, judged on this process's clock.

Part of the shard gate (:mod:`runner.operations.sharding.shards`). Another
replica's Lease counts as expired when its renewTime has not changed for its
leaseDurationSeconds, measured on this process's monotonic clock from when the
change was seen (client-go's rule: no comparison of clocks across machines).
This keeps, per replica, the (holder, renewTime) last read and when it was first
seen. Used by the rounds' thread only: no lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.operations.sharding import membership


@dataclass
class _Seen:
    holder: str
    renewed: str
    at: float  # this process's clock when (holder, renewed) was first seen


class Liveness:
    """When each member's current renewal was first seen, and what follows from it."""

    def __init__(self, *, replica: str) -> None:
        self._replica = replica
        self._seen: dict[str, _Seen] = {}

    def observe(self, members: list[membership.Member], now: float) -> None:
        """Record a read of the group's Leases made at ``now``."""
        current = {m.replica for m in members}
        for member in members:
            seen = self._seen.get(member.replica)
            if seen is None or (seen.holder, seen.renewed) != (member.holder, member.renewed):
                self._seen[member.replica] = _Seen(member.holder, member.renewed, now)
        for gone in set(self._seen) - current:
            del self._seen[gone]

    def expires(self, member: membership.Member) -> float:
        """When ``member``'s Lease, as last observed, expires on this clock."""
        return self._seen[member.replica].at + member.duration

    def alive(self, member: membership.Member, now: float) -> bool:
        seen = self._seen.get(member.replica)
        return bool(member.holder) and seen is not None and now < seen.at + member.duration

    def claims(
        self, members: list[membership.Member], now: float
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The views the other live members published: (replica, view)."""
        return tuple(
            (m.replica, m.view)
            for m in members
            if m.replica != self._replica and m.view and self.alive(m, now)
        )

    def long_gone(self, members: list[membership.Member], now: float) -> list[membership.Member]:
        """The other members not renewed for three durations: their Leases may be removed."""
        return [m for m in members if m.replica != self._replica and self._gone(m, now)]

    def _gone(self, member: membership.Member, now: float) -> bool:
        seen = self._seen.get(member.replica)
        return seen is not None and now > seen.at + 3 * member.duration

    def target(self, members: list[membership.Member], now: float) -> tuple[str, ...]:
        """The view to move to: this replica and the other live ones, sorted."""
        alive = {m.replica for m in members if m.replica != self._replica and self.alive(m, now)}
        return tuple(sorted(alive | {self._replica}))
