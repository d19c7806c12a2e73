"""Consistent hashing: which member of a view owns a key.

Sits beside the queue (watch → **queue** → reconcile → ansible → status): the
shard gate asks it whether a primary object's key belongs to this replica.
Each member is placed on a 64-bit ring at ``vnodes`` points; a key belongs to
the member of the first point at or after the key's hash. Adding or removing
one of N members moves only the keys between its points and their
predecessors, about 1/N of them; every other key keeps its owner. Pure: no
I/O, no clock, no state beyond the points.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

#: Points per member: with 128 the largest share of 3 members stays within ~10 % of 1/3.
DEFAULT_VNODES = 128


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class Ring:
    """An immutable ring over a set of member names."""

    def __init__(self, members: Iterable[str], *, vnodes: int = DEFAULT_VNODES) -> None:
        self.members: tuple[str, ...] = tuple(sorted(set(members)))
        points = sorted(
            (_hash(f"{member}#{index}"), member)
            for member in self.members
            for index in range(vnodes)
        )
        self._hashes = [point for point, _ in points]
        self._owners = [member for _, member in points]

    def owner(self, key: str) -> str | None:
        """The member owning ``key``; None for an empty ring."""
        if not self._hashes:
            return None
        index = bisect.bisect_left(self._hashes, _hash(key))
        return self._owners[index % len(self._owners)]
