"""Who may write: the leader Lease, or this replica's share of the objects.

The election runnable group (:mod:`runner.operations.runnables`), started after the
caches and before the workers — the only writers — as controller-runtime's
leader-election runnables are:

- ``--leader-elect``: :meth:`Election.start` blocks until this replica holds the leader
  Lease (:class:`runner.operations.leader.LeaderElector`), then keeps renewing it;
- ``--sharded``: every replica reconciles its share, owned through one Lease per
  replica (:class:`runner.operations.sharding.Shards`, which also gates every
  controller);
- neither: every replica writes at once, nothing to do.

Losing the Lease or the shards ends the process at once (:meth:`exits.Exit.lost`). At
shutdown the Leases are kept until the runs ended, then released so that a standby
(or the other replicas) may start at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from runner.base import clock, errors
from runner.config import sections
from runner.kube import client as client_mod
from runner.operations import exits, leader, sharding
from runner.operations.metrics import runtime
from runner.operations.sharding import families as sharding_families

#: Hands objects whose shard moved to this replica to their controllers.
HandOver = Callable[[Iterable[sharding.Item]], None]


def shards_for(
    *,
    election: sections.ElectionSettings,
    namespace: str,
    client: client_mod.Client,
    registry: runtime.Metrics,
) -> sharding.Shards:
    """This replica's shards (``--sharded``), their metrics registered; made before the
    controllers, which they gate."""
    replica = election.replica
    problem = sharding.replica_problem(replica)
    if problem:
        raise errors.ConfigError(
            f"replica id {replica!r} (--replica-id, $POD_NAME or the host name): {problem}"
        )
    shards = sharding.Shards(
        leases=sharding.KubeLeases(
            client=client,
            namespace=namespace,
            group=election.shard_group,
            replica=replica,
            holder=sharding.incarnation(replica),
            duration=election.lease_duration,
        ),
        replica=replica,
        clock=clock.MonotonicClock(),
        lease_duration=election.lease_duration,
        renew_deadline=election.renew_deadline,
        retry_period=election.retry_period,
    )
    stats = shards.stats
    registry.add(
        sharding_families.ShardCollector(
            owned=lambda: stats.owned,
            members=lambda: stats.members,
            handovers=lambda: dict(stats.handovers),
            view_changes=lambda: stats.view_changes,
        )
    )
    return shards


class Election:
    """The leader Lease or the shard Leases of this replica, and their threads."""

    def __init__(
        self,
        *,
        election: sections.ElectionSettings,
        namespace: str,
        client: client_mod.Client,
        shards: sharding.Shards | None,
        hand_over: HandOver,
        leave: exits.Exit,
    ) -> None:
        self._settings = election
        self._namespace = namespace  # of the Leases: the flag's, else the pod's
        self._client = client
        self._leave = leave
        self._elector: leader.LeaderElector | None = None
        self._shards = shards  # sharded mode (from shards_for)
        self._hand_over = hand_over
        # Shard rounds and the leader's renewals go on while running reconciles drain
        # at shutdown: stop events of their own, so the Leases are kept until the runs end.
        self._shards_stop = threading.Event()
        self._shards_thread: threading.Thread | None = None
        self._lease_stop = threading.Event()

    def start(self, stop: threading.Event) -> bool:
        """Block until leader (or not electing); False if stopped while waiting."""
        if not self._lead(stop):
            return False
        if self._shards is not None:
            self._shards_thread = threading.Thread(
                target=self._shards.run,
                args=(self._shards_stop,),
                kwargs={"enqueue": self._hand_over, "on_fenced": self._fenced},
                name="shards",
                daemon=True,
            )
            self._shards_thread.start()
        return True

    def _lead(self, stop: threading.Event) -> bool:
        settings = self._settings
        if not settings.leader_elect:
            return True
        self._elector = leader.LeaderElector(
            client=self._client,
            namespace=self._namespace,
            name=settings.lease_name,
            identity=leader.default_identity(),
            lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline,
            retry_period=settings.retry_period,
        )
        if not self._elector.acquire(stop):
            return False
        threading.Thread(
            target=self._elector.keep,
            args=(self._lease_stop,),
            kwargs={"on_lost": self._leadership_lost},
            name="lease",
            daemon=True,
        ).start()
        return True

    def _leadership_lost(self) -> None:
        # Another replica may already reconcile: stop at once rather than risk two writers.
        self._leave.lost("exiting: leadership lost")

    def _fenced(self, reason: str) -> None:
        # Our claims may soon count as expired elsewhere: stop before two replicas run one key.
        self._leave.lost("exiting: shard ownership lost", reason=reason)

    def stop(self, *, deadline: float, clean: bool) -> bool:
        self._lease_stop.set()
        if self._elector is not None and clean:
            self._elector.release()  # runs ended: a standby may start at once
        self._shards_stop.set()
        if self._shards is not None and self._shards_thread is not None:
            self._shards_thread.join(timeout=30)
            if clean:
                self._shards.release()  # runs ended: the others may take our objects at once
        return True
