"""The shard gate: which primary objects this replica may reconcile, and when.

Sits between the watches and the queue, and in front of each reconcile
(watch → **gate** → queue → **gate** → reconcile → ansible → status). The
controller asks :meth:`Shards.owns` before a key enters its queue (primary and
dependent events alike, both already mapped to the owner's key), and
:meth:`Shards.begin` / :meth:`Shards.end` around every reconcile.

The invariant, "never two at once": a replica runs a key only while its
published Lease claims it, and starts a run only after reading, since its last
write, that no other live Lease claims it. It works like this:

- *claims*: each replica publishes the view (sorted replica ids) it acts on in
  its Lease (:mod:`runner.operations.sharding.membership`); it claims the keys the ring of
  that view gives it (:mod:`runner.operations.sharding.ring`);
- *release before publish*: when the live members change, a replica stops
  starting keys the new view takes from it, waits until none of those runs
  are still going, and only then publishes the new view (dropping the claims);
- *write, then read*: each round writes this replica's Lease, then lists the
  group's Leases; a run starts only when that list shows no other live claim
  on the key. Of two replicas that both claim a key, the later writer reads
  the earlier one's claim (the API server is linearisable), so at most one
  starts; once views agree only one claims it;
- *expiry on the reader's clock*: another Lease counts as expired when its
  renewTime has not changed for its leaseDurationSeconds, measured on this
  process's monotonic clock from when the change was seen (client-go's rule:
  no comparison of clocks across machines). The holder itself starts nothing
  once ``renew_deadline`` (< the duration) has passed since it sent its last
  successful write, and exits (``on_fenced``) if runs are still going then,
  so its runs end before anyone may count its claims as expired. That check
  runs on its own timer thread (the *fence*), so it fires on time even while a
  round is blocked in a request to a silent API server; and every Lease
  request is bounded by the time left before the deadline (a whole deadline
  when none is left), so a round is not held for the client's 30 s timeout;
- *release on shutdown*: after its runs ended the replica deletes its Lease,
  so the others take over at their next round instead of after expiry.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from runner.base.clock import Clock
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, ObjectKey
from runner.operations.sharding import fence, handover, liveness, membership, renewal, ring, views

log = logging.getLogger("runner.sharding")


def shard_key(gvk: GVK, key: ObjectKey) -> str:
    """The string hashed onto the ring: kinds spread independently of each other."""
    return f"{gvk.group}/{gvk.kind}/{key}"


@dataclass
class Stats:
    """Counters for the metrics: handovers by direction, view changes, owned keys."""

    handovers: Counter[str] = field(default_factory=Counter)  # "acquired" / "released"
    view_changes: int = 0
    owned: int = 0
    members: int = 0


class Shards:
    """Ownership of primary objects among the live replicas of one shard group."""

    def __init__(
        self,
        *,
        leases: membership.Leases,
        replica: str,
        clock: Clock,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        vnodes: int = ring.DEFAULT_VNODES,
    ) -> None:
        self._leases = leases
        self.replica = replica
        self._clock = clock
        self._duration = lease_duration
        self._renewal = renewal.Renewal(clock=clock, deadline=min(renew_deadline, lease_duration))
        self.retry_period = retry_period
        self._lock = threading.Lock()
        self._view = views.View()
        self._admission = views.Admission(replica=replica, vnodes=vnodes)
        self._liveness = liveness.Liveness(replica=replica)
        self._fresh = False  # a read followed the latest successful write
        self._running: Counter[str] = Counter()
        self._handovers = handover.Handovers()
        self._waiting = False  # join() logged that it waits for an earlier Lease
        self._fence = fence.Fence(
            clock=clock, overdue=self.overdue, deadline=self._renewal_deadline
        )
        self.stats = Stats()

    # -- what the controller asks --------------------------------------------

    def seen(self, gvk: GVK, key: ObjectKey, *, present: bool) -> None:
        """Note that a primary object exists (or is gone), so a round can hand it over."""
        skey = shard_key(gvk, key)
        with self._lock:
            self._handovers.seen(skey, (gvk, key), present=present)

    def owns(self, gvk: GVK, key: ObjectKey) -> bool:
        """Whether the key belongs here under the current view (it may still wait to start)."""
        with self._lock:
            return self._admission.owner(self._view.target, shard_key(gvk, key)) == self.replica

    def begin(self, gvk: GVK, key: ObjectKey) -> bool:
        """Start a run of the key if it may start now; then :meth:`end` must follow."""
        skey = shard_key(gvk, key)
        with self._lock:
            if (
                not self._fresh
                or not self._renewal.valid()
                or not self._admission.admits(self._view, skey)
            ):
                return False
            self._running[skey] += 1
            return True

    def end(self, gvk: GVK, key: ObjectKey) -> None:
        skey = shard_key(gvk, key)
        with self._lock:
            self._running[skey] -= 1
            if self._running[skey] <= 0:
                del self._running[skey]

    def running(self) -> int:
        with self._lock:
            return self._running.total()

    # -- rounds ---------------------------------------------------------------

    def join(self) -> list[handover.Item]:
        """First rounds at start-up: read the group, publish, read again."""
        members = self._leases.read(timeout=self._budget())
        now = self._clock.now()
        mine = next((m for m in members if m.replica == self.replica), None)
        self._liveness.observe(members, now)
        take_over = False
        if mine is not None and mine.holder:
            # A Lease left by an earlier process with this replica id: wait until it
            # expires, since that process may still be running keys it claims.
            take_over = True
            deadline = self._liveness.expires(mine)
            if now < deadline:
                if not self._waiting:  # once, not every round
                    self._waiting = True
                    log.info(
                        "waiting for this replica's previous Lease to expire",
                        extra={"replica": self.replica, "holder": mine.holder},
                    )
                return []
        with self._lock:
            self._view = views.View(target=self._liveness.target(members, now), published=None)
        return self.tick(take_over=take_over)

    def tick(self, *, take_over: bool = False) -> list[handover.Item]:
        """One round: publish (when drained) and renew, then read; once more at once when
        the read changed the view and nothing needs draining, so a handover takes one
        round, not two. Returns the keys that may start here now and could not before:
        the caller enqueues them."""
        gained = self._round(take_over=take_over)
        with self._lock:
            view = self._view
            again = self._fresh and self._admission.publishable(view, self._running)
        if again:
            gained += self._round(take_over=False)
        return gained

    def _round(self, *, take_over: bool) -> list[handover.Item]:
        with self._lock:
            view = self._view
            publish = view.published
            if self._admission.publishable(view, self._running):
                publish = view.target
        sent = self._clock.now()
        try:
            self._leases.write(view=publish or (), take_over=take_over, timeout=self._budget())
        except kube_errors.KubeError as exc:
            with self._lock:
                self._fresh = False
            log.warning("shard Lease renewal failed", extra={"error": str(exc)})
            return []
        with self._lock:
            self._renewal.renewed(sent)
            if publish != view.published:
                self._view = views.View(target=view.target, published=publish, claims=view.claims)
                self.stats.view_changes += 1
                log.info(
                    "shard view published",
                    extra={"replica": self.replica, "view": list(publish or ())},
                )
        self._fence.wake()  # the deadline moved
        try:
            members = self._leases.read(timeout=self._budget())
        except kube_errors.KubeError as exc:
            with self._lock:
                self._fresh = False
            log.warning("shard Lease list failed", extra={"error": str(exc)})
            return []
        now = self._clock.now()
        self._liveness.observe(members, now)
        mine = next((m for m in members if m.replica == self.replica), None)
        if mine is None:
            # Deleted since our write (by hand): our claims are not stored; start nothing
            # until a later round has written the Lease again.
            with self._lock:
                self._fresh = False
            log.warning("shard Lease missing after renewal", extra={"replica": self.replica})
            return []
        if mine.holder != self._leases.holder:
            raise membership.LeaseHeldError(
                f"replica {self.replica}'s Lease is held by {mine.holder}"
            )
        claims = self._liveness.claims(members, now)
        for member in self._liveness.long_gone(members, now):
            self._leases.remove(member, timeout=self._budget())
        with self._lock:
            old = self._view
            new = views.View(
                target=self._liveness.target(members, now), published=old.published, claims=claims
            )
            self._view = new
            self._fresh = True
            change = self._handovers.settle(lambda skey: self._admission.admits(new, skey))
            self.stats.handovers["acquired"] += change.acquired
            self.stats.handovers["released"] += change.released
            self.stats.owned = change.owned
            self.stats.members = len(new.target)
        if new.target != old.target:
            log.info(
                "shard members changed",
                extra={"replica": self.replica, "members": list(new.target)},
            )
        return change.gained

    def overdue(self) -> bool:
        """Renewal is past its deadline while runs are still going: the caller must stop
        them (exit) before other replicas may count this replica's claims as expired."""
        with self._lock:
            return not self._renewal.valid() and self._running.total() > 0

    def run(
        self,
        stop: threading.Event,
        *,
        enqueue: Callable[[Iterable[handover.Item]], None],
        on_fenced: Callable[[str], None],
    ) -> None:
        """Rounds every ``retry_period`` until ``stop``; gained keys go to ``enqueue``.

        ``on_fenced`` is called once, from this thread or the fence's, when this
        replica must stop at once (its runs may outlive its claims)."""
        self._fence.start(stop, on_fenced=on_fenced)
        try:
            while not stop.is_set():
                try:
                    gained = self.tick() if self._renewal.sent is not None else self.join()
                except membership.LeaseHeldError as exc:
                    self._fence.fire(str(exc), on_fenced)
                    return
                except Exception:
                    log.exception("shard round failed")
                    gained = []
                if gained:
                    enqueue(gained)
                if self.overdue():
                    self._fence.fire(fence.REASON, on_fenced)
                    return
                stop.wait(self.retry_period)
        finally:
            self._fence.wake()  # to see ``stop``

    def fence(self, stop: threading.Event, *, on_fenced: Callable[[str], None]) -> None:
        """Until ``stop`` (noticed when :meth:`run` ends): wait for the renew deadline
        and call ``on_fenced`` if runs are still going then, whatever the rounds are
        blocked in. Runs cannot start past the deadline (:meth:`begin`), so once it
        passed with none going, only a renewal (which wakes this) can change that."""
        self._fence.watch(stop, on_fenced=on_fenced)

    def release(self) -> None:
        """Give the claims up at once (after the runs ended): delete this replica's Lease."""
        with self._lock:
            self._fresh = False
        try:
            self._leases.release(timeout=self._budget())
            log.info("shard Lease released", extra={"replica": self.replica})
        except kube_errors.KubeError as exc:
            log.warning("could not release the shard Lease", extra={"error": str(exc)})

    # -- internals (callers hold the lock where state is read) ------------------

    def _budget(self) -> float:
        """The timeout of the next Lease call: the time left before the renew deadline,
        or a whole deadline when none is left (a new try at renewing, starting nothing)."""
        with self._lock:
            return self._renewal.budget()

    def _renewal_deadline(self) -> float | None:
        """The renew deadline of the latest successful write, unless it has passed."""
        with self._lock:
            return self._renewal.until()
