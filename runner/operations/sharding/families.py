"""Sharded mode's families: what this replica owns, whom it sees, what moved.

Read at scrape time from :class:`runner.operations.sharding.shards.Shards`' counters
(``Shards.stats``); registered only with ``--sharded``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runner.prometheus import registry as registry_mod


class ShardCollector:
    """Sharded mode (runner.operations.sharding), read at scrape time."""

    def __init__(
        self,
        *,
        owned: Callable[[], int],
        members: Callable[[], int],
        handovers: Callable[[], dict[str, int]],
        view_changes: Callable[[], int],
    ) -> None:
        self._owned = owned
        self._members = members
        self._handovers = handovers
        self._view_changes = view_changes

    def collect(self) -> Iterator[registry_mod.Family]:
        mine = registry_mod.GaugeFamily(
            "playbook_operator_shard_owned_resources",
            "Primary objects this replica may reconcile now.",
        )
        mine.add_metric([], self._owned())
        yield mine
        live = registry_mod.GaugeFamily(
            "playbook_operator_shard_members", "Live replicas in this replica's view."
        )
        live.add_metric([], self._members())
        yield live
        moved = registry_mod.CounterFamily(
            "playbook_operator_shard_handovers",
            "Objects handed over between replicas: acquired from or released to another replica.",
            labels=["direction"],
        )
        counts = self._handovers()
        for direction in ("acquired", "released"):
            moved.add_metric([direction], counts.get(direction, 0))
        yield moved
        changes = registry_mod.CounterFamily(
            "playbook_operator_shard_view_changes",
            "Membership views this replica published (its ownership changed).",
        )
        changes.add_metric([], self._view_changes())
        yield changes
