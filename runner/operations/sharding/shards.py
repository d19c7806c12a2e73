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
from runner.operations.sharding import membership, ring

log = logging.getLogger("runner.sharding")

#: A primary object: its kind and its queue key.
Item = tuple[GVK, ObjectKey]


def shard_key(gvk: GVK, key: ObjectKey) -> str:
    """The string hashed onto the ring: kinds spread independently of each other."""
    return f"{gvk.group}/{gvk.kind}/{key}"


@dataclass(frozen=True)
class _View:
    """What one round established: the replica's target and published views, and the
    other live replicas' claims, as read after the replica's latest write."""

    target: tuple[str, ...] = ()
    published: tuple[str, ...] | None = None
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (replica, its published view)


@dataclass
class _Seen:
    holder: str
    renewed: str
    at: float  # this process's clock when (holder, renewed) was first seen


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
        self._deadline = min(renew_deadline, lease_duration)
        self.retry_period = retry_period
        self._vnodes = vnodes
        self._lock = threading.Lock()
        self._view = _View()
        self._fresh = False  # a read followed the latest successful write
        self._renewed_at: float | None = None  # when the latest successful write was sent
        self._running: Counter[str] = Counter()
        self._known: dict[str, Item] = {}
        self._admitted: set[str] = set()  # keys that could start at the latest round
        self._existed: set[str] = set()  # keys known at the latest round
        self._seen: dict[str, _Seen] = {}
        self._rings: dict[tuple[str, ...], ring.Ring] = {}
        self._waiting = False  # join() logged that it waits for an earlier Lease
        # Wakes the fence when a renewal moved the deadline or the rounds stopped.
        self._fence_wake = threading.Condition()
        self._fenced = False  # on_fenced was called (once only)
        self.stats = Stats()

    # -- what the controller asks --------------------------------------------

    def seen(self, gvk: GVK, key: ObjectKey, *, present: bool) -> None:
        """Note that a primary object exists (or is gone), so a round can hand it over."""
        skey = shard_key(gvk, key)
        with self._lock:
            if present:
                self._known[skey] = (gvk, key)
            else:
                self._known.pop(skey, None)

    def owns(self, gvk: GVK, key: ObjectKey) -> bool:
        """Whether the key belongs here under the current view (it may still wait to start)."""
        with self._lock:
            return self._ring(self._view.target).owner(shard_key(gvk, key)) == self.replica

    def begin(self, gvk: GVK, key: ObjectKey) -> bool:
        """Start a run of the key if it may start now; then :meth:`end` must follow."""
        skey = shard_key(gvk, key)
        with self._lock:
            if not self._fresh or not self._valid() or not self._admits(self._view, skey):
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

    def join(self) -> list[Item]:
        """First rounds at start-up: read the group, publish, read again."""
        members = self._leases.read(timeout=self._budget())
        now = self._clock.now()
        mine = next((m for m in members if m.replica == self.replica), None)
        self._observe(members, now)
        take_over = False
        if mine is not None and mine.holder:
            # A Lease left by an earlier process with this replica id: wait until it
            # expires, since that process may still be running keys it claims.
            take_over = True
            deadline = self._seen[mine.replica].at + mine.duration
            if now < deadline:
                if not self._waiting:  # once, not every round
                    self._waiting = True
                    log.info(
                        "waiting for this replica's previous Lease to expire",
                        extra={"replica": self.replica, "holder": mine.holder},
                    )
                return []
        with self._lock:
            self._view = _View(target=self._target(members, now), published=None)
        return self.tick(take_over=take_over)

    def tick(self, *, take_over: bool = False) -> list[Item]:
        """One round: publish (when drained) and renew, then read; once more at once when
        the read changed the view and nothing needs draining, so a handover takes one
        round, not two. Returns the keys that may start here now and could not before:
        the caller enqueues them."""
        gained = self._round(take_over=take_over)
        with self._lock:
            view = self._view
            again = self._fresh and view.target != view.published and self._drained(view.target)
        if again:
            gained += self._round(take_over=False)
        return gained

    def _round(self, *, take_over: bool) -> list[Item]:
        with self._lock:
            view = self._view
            publish = view.published
            if view.target != view.published and self._drained(view.target):
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
            self._renewed_at = sent
            if publish != view.published:
                self._view = _View(target=view.target, published=publish, claims=view.claims)
                self.stats.view_changes += 1
                log.info(
                    "shard view published",
                    extra={"replica": self.replica, "view": list(publish or ())},
                )
        with self._fence_wake:
            self._fence_wake.notify_all()  # the deadline moved
        try:
            members = self._leases.read(timeout=self._budget())
        except kube_errors.KubeError as exc:
            with self._lock:
                self._fresh = False
            log.warning("shard Lease list failed", extra={"error": str(exc)})
            return []
        now = self._clock.now()
        self._observe(members, now)
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
        claims = tuple(
            (m.replica, m.view)
            for m in members
            if m.replica != self.replica and m.view and self._alive(m, now)
        )
        for member in members:
            if member.replica != self.replica and self._long_gone(member, now):
                self._leases.remove(member, timeout=self._budget())
        with self._lock:
            old = self._view
            new = _View(target=self._target(members, now), published=old.published, claims=claims)
            self._view = new
            self._fresh = True
            admitted = {skey for skey in self._known if self._admits(new, skey)}
            gained = [self._known[skey] for skey in admitted - self._admitted]
            # Handovers count keys that existed at the previous round: not new objects,
            # not the keys taken at start-up, not deleted ones.
            self.stats.handovers["acquired"] += len((admitted - self._admitted) & self._existed)
            self.stats.handovers["released"] += len(
                (self._admitted - admitted) & self._known.keys()
            )
            self._admitted, self._existed = admitted, set(self._known)
            self.stats.owned = len(admitted)
            self.stats.members = len(new.target)
        if new.target != old.target:
            log.info(
                "shard members changed",
                extra={"replica": self.replica, "members": list(new.target)},
            )
        return gained

    def overdue(self) -> bool:
        """Renewal is past its deadline while runs are still going: the caller must stop
        them (exit) before other replicas may count this replica's claims as expired."""
        with self._lock:
            return not self._valid() and self._running.total() > 0

    def run(
        self,
        stop: threading.Event,
        *,
        enqueue: Callable[[Iterable[Item]], None],
        on_fenced: Callable[[str], None],
    ) -> None:
        """Rounds every ``retry_period`` until ``stop``; gained keys go to ``enqueue``.

        ``on_fenced`` is called once, from this thread or the fence's, when this
        replica must stop at once (its runs may outlive its claims)."""
        fence = threading.Thread(
            target=self.fence,
            args=(stop,),
            kwargs={"on_fenced": on_fenced},
            daemon=True,
            name="shards-fence",
        )
        fence.start()
        try:
            while not stop.is_set():
                try:
                    gained = self.tick() if self._renewed_at is not None else self.join()
                except membership.LeaseHeldError as exc:
                    self._fire(str(exc), on_fenced)
                    return
                except Exception:
                    log.exception("shard round failed")
                    gained = []
                if gained:
                    enqueue(gained)
                if self.overdue():
                    self._fire("shard Lease not renewed within the renew deadline", on_fenced)
                    return
                stop.wait(self.retry_period)
        finally:
            with self._fence_wake:
                self._fence_wake.notify_all()  # to see ``stop``

    def fence(self, stop: threading.Event, *, on_fenced: Callable[[str], None]) -> None:
        """Until ``stop`` (noticed when :meth:`run` ends): wait for the renew deadline
        and call ``on_fenced`` if runs are still going then, whatever the rounds are
        blocked in. Runs cannot start past the deadline (:meth:`begin`), so once it
        passed with none going, only a renewal (which wakes this) can change that."""
        with self._fence_wake:
            while not stop.is_set():
                if self.overdue():
                    break
                with self._lock:
                    if self._fenced:  # by the rounds' thread
                        return
                    renewed, valid = self._renewed_at, self._valid()
                deadline = renewed + self._deadline if renewed is not None and valid else None
                self._clock.wait_until(self._fence_wake, deadline)
            else:
                return
        self._fire("shard Lease not renewed within the renew deadline", on_fenced)

    def _fire(self, reason: str, on_fenced: Callable[[str], None]) -> None:
        with self._lock:
            if self._fenced:
                return
            self._fenced = True
        on_fenced(reason)

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

    def _ring(self, view: tuple[str, ...]) -> ring.Ring:
        found = self._rings.get(view)
        if found is None:
            if len(self._rings) > 64:
                self._rings.clear()
            found = self._rings[view] = ring.Ring(view, vnodes=self._vnodes)
        return found

    def _budget(self) -> float:
        """The timeout of the next Lease call: the time left before the renew deadline,
        or a whole deadline when none is left (a new try at renewing, starting nothing)."""
        with self._lock:
            renewed = self._renewed_at
        left = 0.0 if renewed is None else renewed + self._deadline - self._clock.now()
        return left if left > 0 else self._deadline

    def _valid(self) -> bool:
        return (
            self._renewed_at is not None and self._clock.now() < self._renewed_at + self._deadline
        )

    def _admits(self, view: _View, skey: str) -> bool:
        if view.published is None:
            return False
        if self._ring(view.target).owner(skey) != self.replica:
            return False
        if self._ring(view.published).owner(skey) != self.replica:
            return False
        return all(self._ring(theirs).owner(skey) != other for other, theirs in view.claims)

    def _drained(self, target: tuple[str, ...]) -> bool:
        owners = self._ring(target)
        return all(owners.owner(skey) == self.replica for skey in self._running)

    def _observe(self, members: list[membership.Member], now: float) -> None:
        current = {m.replica for m in members}
        for member in members:
            seen = self._seen.get(member.replica)
            if seen is None or (seen.holder, seen.renewed) != (member.holder, member.renewed):
                self._seen[member.replica] = _Seen(member.holder, member.renewed, now)
        for gone in set(self._seen) - current:
            del self._seen[gone]

    def _alive(self, member: membership.Member, now: float) -> bool:
        seen = self._seen.get(member.replica)
        return bool(member.holder) and seen is not None and now < seen.at + member.duration

    def _long_gone(self, member: membership.Member, now: float) -> bool:
        seen = self._seen.get(member.replica)
        return seen is not None and now > seen.at + 3 * member.duration

    def _target(self, members: list[membership.Member], now: float) -> tuple[str, ...]:
        alive = {m.replica for m in members if m.replica != self.replica and self._alive(m, now)}
        return tuple(sorted(alive | {self.replica}))
