"""Which known primary objects a round hands to this replica, and which it hands away.

Part of the shard gate (:mod:`runner.operations.sharding.shards`). The controller
tells the gate which primary objects exist; after each round the gate asks this
which of them may start here now and could not before (the caller enqueues
them), and counts the handovers for the metrics. No lock: the gate calls it
under its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runner.kube.types import GVK, ObjectKey

#: A primary object: its kind and its queue key.
Item = tuple[GVK, ObjectKey]


@dataclass(frozen=True)
class Change:
    """What one round changed for this replica."""

    gained: list[Item]  # may start here now and could not at the previous round
    acquired: int  # handovers to here: gained keys that existed at the previous round
    released: int  # handovers away: keys that could start here before, not now, still existing
    owned: int  # keys that may start here now


class Handovers:
    """The primary objects known here, by shard key, and the ones admitted last round."""

    def __init__(self) -> None:
        self._known: dict[str, Item] = {}
        self._admitted: set[str] = set()  # keys that could start at the latest round
        self._existed: set[str] = set()  # keys known at the latest round

    def seen(self, skey: str, item: Item, *, present: bool) -> None:
        if present:
            self._known[skey] = item
        else:
            self._known.pop(skey, None)

    def settle(self, admits: Callable[[str], bool]) -> Change:
        """Admit the known keys anew with ``admits`` (the view the round established)."""
        admitted = {skey for skey in self._known if admits(skey)}
        gained = admitted - self._admitted
        change = Change(
            gained=[self._known[skey] for skey in gained],
            # Handovers count keys that existed at the previous round: not new objects,
            # not the keys taken at start-up, not deleted ones.
            acquired=len(gained & self._existed),
            released=len((self._admitted - admitted) & self._known.keys()),
            owned=len(admitted),
        )
        self._admitted, self._existed = admitted, set(self._known)
        return change
