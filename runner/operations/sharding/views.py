"""Which keys a replica may start under what it last read: views, claims and their rings.

Part of the shard gate (:mod:`runner.operations.sharding.shards`). A :class:`View`
is what one round established: the members this replica is moving to (its
*target*), the members of the view it published in its Lease, and the views the
other live replicas published. :class:`Admission` answers from rings over those
views: a key may start here only when both this replica's views give it the key
and no other live replica's published view gives it to that replica. Pure: no
I/O, no clock, no lock (the gate calls it under its own).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.operations.sharding import ring


@dataclass(frozen=True)
class View:
    """What one round established: the replica's target and published views, and the
    other live replicas' claims, as read after the replica's latest write."""

    target: tuple[str, ...] = ()
    published: tuple[str, ...] | None = None
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (replica, its published view)


class Admission:
    """Ownership of shard keys by ``replica`` under views, from a small cache of rings."""

    def __init__(self, *, replica: str, vnodes: int) -> None:
        self._replica = replica
        self._vnodes = vnodes
        self._rings: dict[tuple[str, ...], ring.Ring] = {}

    def owner(self, members: tuple[str, ...], skey: str) -> str | None:
        """Who owns ``skey`` among ``members`` (None when there are none)."""
        return self._ring(members).owner(skey)

    def admits(self, view: View, skey: str) -> bool:
        """Whether the key may start here under ``view``."""
        if view.published is None:
            return False
        if self.owner(view.target, skey) != self._replica:
            return False
        if self.owner(view.published, skey) != self._replica:
            return False
        return all(self.owner(theirs, skey) != other for other, theirs in view.claims)

    def publishable(self, view: View, running: Iterable[str]) -> bool:
        """Whether to publish the target now (*release before publish*): it differs from
        the published view and no key still running here moves under it."""
        return view.target != view.published and self.drained(view.target, running)

    def drained(self, target: tuple[str, ...], running: Iterable[str]) -> bool:
        """Whether every key still running here stays here under ``target``."""
        owners = self._ring(target)
        return all(owners.owner(skey) == self._replica for skey in running)

    def _ring(self, view: tuple[str, ...]) -> ring.Ring:
        found = self._rings.get(view)
        if found is None:
            if len(self._rings) > 64:
                self._rings.clear()
            found = self._rings[view] = ring.Ring(view, vnodes=self._vnodes)
        return found
