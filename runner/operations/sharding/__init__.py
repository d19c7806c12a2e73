"""Active-active sharding: N replicas reconcile at once, each object owned by one.

Where it sits: between the watches and the queue, and in front of each
reconcile (watch → **gate** → queue → **gate** → reconcile → ansible →
status). The manager builds one :class:`Shards` when run with ``--sharded``
and hands it to every controller as its gate. Modules:

- :mod:`runner.operations.sharding.ring` — consistent hashing of keys over a view;
- :mod:`runner.operations.sharding.membership` — one Lease per replica, publishing its view;
- :mod:`runner.operations.sharding.shards` — the gate and its rounds: who may start what, and
  the handover protocol that keeps two replicas from running one object at once, over
  ``views`` (which keys a view lets this replica start), ``liveness`` (other Leases' expiry
  on this clock), ``handover`` (known objects gained and given up), ``renewal`` (the
  holder's renew deadline) and ``fence`` (the timer that stops a replica whose runs outlive
  its claims).

Import contract: this package uses only :mod:`runner.base.clock` and :mod:`runner.kube`
of the runtime (checked by import-linter).

Public API (``__all__``, what the manager, the controllers and the election import from
here): :class:`Shards` and its :data:`Item`, and the membership it is built from.
"""

from runner.operations.sharding.handover import Item
from runner.operations.sharding.membership import (
    KubeLeases,
    LeaseHeldError,
    Member,
    incarnation,
    replica_problem,
)
from runner.operations.sharding.ring import Ring
from runner.operations.sharding.shards import Shards, Stats, shard_key

__all__ = [
    "Item",
    "KubeLeases",
    "LeaseHeldError",
    "Member",
    "Ring",
    "Shards",
    "Stats",
    "incarnation",
    "replica_problem",
    "shard_key",
]
