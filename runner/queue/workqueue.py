"""The work queue between the watches and the reconcile workers.

Flow: watch → **queue** → reconcile → ansible → status. Watch handlers ``add``
keys; workers ``get`` a key, reconcile it, then call ``done``. It merges
client-go's rate-limited workqueue with controller-runtime's priority queue:

- one pending entry per key: repeated adds fold into it (earliest due time,
  highest priority win);
- a key handed to a worker is not handed out again until ``done``; adds that
  arrive meanwhile fold into one follow-up run, released by ``done``;
- with ``settle``, a follow-up whose adds were still arriving as its run ended
  waits until they stop (:mod:`runner.queue.settle`): a burst of edits costs two
  runs, however fast a run is; a key that is not running still runs at once;
- ready keys are served EVENT before RESYNC, then oldest due time first;
- each pending key carries the :class:`~runner.queue.trigger.Trigger` of the add
  that decides when it runs (the first, unless a later add makes it due sooner or
  raises its priority), the others that were due counted in its ``folded`` (a
  delayed add is not: the run re-adds its own); ``trigger_of`` gives a worker the
  one of the key it holds.

Unlike client-go, ``get`` returns ``None`` as soon as the queue shuts down
instead of draining it: a drain would start one Ansible run per key.

For client-go's ``workqueue_*`` metrics the queue reports, through an optional
:class:`QueueObserver`, how long each key waited once ready and how long a worker
held it, and :meth:`WorkQueue.stats` gives the rest at scrape time (both kept
by :mod:`runner.queue.meter`; the retry delays are :mod:`runner.queue.backoff`'s). A pending
key counts as added to client-go's queue at its due time, which is exactly
when client-go's delaying queue would have added it.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import threading
from dataclasses import dataclass
from enum import IntEnum

from runner.base.clock import Clock, MonotonicClock
from runner.kube.types import ObjectKey
from runner.queue import backoff, meter, settle, trigger


class Priority(IntEnum):
    """Higher is served first (controller-runtime's numbers: initial list is -100)."""

    RESYNC = -100  # periodic requeues and the initial-list backlog after a restart
    EVENT = 0  # a watch event: someone just changed something


@dataclass(frozen=True, slots=True)
class _Entry:
    priority: Priority
    due: float
    stamp: int  # heap tuples carrying another stamp are stale
    why: trigger.Trigger = trigger.OTHER


class WorkQueue:
    """Thread-safe, deduplicating, delaying, rate-limited queue of object keys.

    The retry delays (and why their defaults are 1 s → 300 s) are
    :class:`~runner.queue.backoff.Backoff`'s.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        base_delay: float = 1.0,
        max_delay: float = 300.0,
        observer: meter.QueueObserver | None = None,
        settle_after: float = 0.0,
    ) -> None:
        self._clock: Clock = clock or MonotonicClock()
        self._backoff = backoff.Backoff(base_delay=base_delay, max_delay=max_delay)
        self._cond = threading.Condition()
        self._pending: dict[ObjectKey, _Entry] = {}
        self._ready: list[tuple[int, float, int, ObjectKey]] = []  # (-priority, due, stamp, key)
        self._waiting: list[tuple[float, int, ObjectKey]] = []  # (due, stamp, key)
        self._processing: dict[ObjectKey, Priority] = {}  # key -> priority it was served at
        self._taken: dict[ObjectKey, trigger.Trigger] = {}  # why each key handed out runs
        self._quiet = settle.Settle(settle=settle_after, hold_max=settle.HOLD_MAX)
        self._stamps = itertools.count()
        self._shutting_down = False
        self._meter = meter.Meter(observer)  # metrics only

    # -- producers ----------------------------------------------------------

    def add(
        self,
        key: ObjectKey,
        *,
        priority: Priority = Priority.EVENT,
        why: trigger.Trigger | None = None,
    ) -> None:
        """Make ``key`` ready now. Already pending: folded in (priority may rise)."""
        with self._cond:
            self._put(key, priority=priority, due=self._clock.now(), why=why)

    def add_after(
        self,
        key: ObjectKey,
        delay: float,
        *,
        priority: Priority = Priority.RESYNC,
        why: trigger.Trigger | None = None,
    ) -> None:
        """Make ``key`` ready ``delay`` seconds from now; an earlier pending time wins.

        The worker calls this for ``requeue_after`` / the reconcile period, after
        ``forget`` (a requested requeue is not a failure), and before ``done``.
        """
        with self._cond:
            self._count_retry()
            self._put(key, priority=priority, due=self._clock.now() + max(0.0, delay), why=why)

    def add_rate_limited(self, key: ObjectKey, *, priority: Priority | None = None) -> None:
        """Retry ``key`` after ``base_delay * 2**failures`` (capped), counting one failure.

        The worker calls this when a reconcile raised or Ansible reported a
        failed task, before ``done``; no ``forget``, so the next failure waits
        twice as long. ``priority`` defaults to the one the key was served at
        (controller-runtime keeps it too), else EVENT.
        """
        with self._cond:
            self._count_retry()
            delay, attempt = self._backoff.fail(key)
            if priority is None:
                priority = self._processing.get(key, Priority.EVENT)
            why = trigger.Trigger(trigger.Kind.RETRY, f"attempt {attempt}")
            self._put(key, priority=priority, due=self._clock.now() + delay, why=why)

    def failures(self, key: ObjectKey) -> int:
        with self._cond:
            return self._backoff.failures(key)

    def trigger_of(self, key: ObjectKey) -> trigger.Trigger:
        """Why the key a worker holds (between ``get`` and ``done``) runs."""
        with self._cond:
            return self._taken.get(key, trigger.OTHER)

    def forget(self, key: ObjectKey) -> None:
        """Reset ``key``'s backoff. Call on success and on ``requeue_after``, never on failure."""
        with self._cond:
            self._backoff.forget(key)

    def shutdown(self) -> None:
        """Stop handing out keys and wake every blocked ``get``; later adds are dropped."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    # -- consumers ----------------------------------------------------------

    def get(self, timeout: float | None = None) -> ObjectKey | None:
        """Block until a key is ready and hand it out, marked as processing.

        Returns ``None`` after ``timeout`` clock-seconds or on shutdown. Every key
        returned must be passed to ``done`` exactly once, whatever the outcome.
        """
        with self._cond:
            now = self._clock.now()
            deadline = None if timeout is None else now + timeout
            try:
                while not self._shutting_down:
                    now = self._clock.now()
                    self._promote(now)
                    key = self._pop_ready(now)
                    if key is not None:
                        return key
                    if deadline is not None and now >= deadline:
                        return None
                    wake = self._waiting[0][0] if self._waiting else None
                    if deadline is not None and (wake is None or deadline < wake):
                        wake = deadline
                    self._clock.wait_until(self._cond, wake)
                return None
            finally:
                # Hand the baton on: another getter re-checks what is left and
                # takes over waiting for the next due time this one may have held.
                if self._pending:
                    self._cond.notify()

    def done(self, key: ObjectKey) -> None:
        """Release ``key``; a follow-up that arrived while it ran becomes servable.

        Call after the outcome was recorded (``forget`` / ``add_after`` /
        ``add_rate_limited``), so the follow-up sees the new backoff state.
        """
        with self._cond:
            now = self._clock.now()
            self._processing.pop(key, None)
            self._taken.pop(key, None)
            self._meter.released(key, now=now)
            entry = self._pending.get(key)
            if entry is None or entry.due > now:
                return
            if (held := self._quiet.released(key, now=now)) is not None:
                # Edits still arrived as the run ended: the follow-up waits until they stop.
                del self._pending[key]
                self._put(key, priority=entry.priority, due=held, why=entry.why)
            else:
                heapq.heappush(self._ready, (-entry.priority, entry.due, entry.stamp, key))
                self._cond.notify()

    # -- metrics ------------------------------------------------------------

    def depth(self) -> int:
        """Keys waiting to run: ready, delayed, and follow-ups of running keys."""
        with self._cond:
            return len(self._pending)

    def __len__(self) -> int:
        return self.depth()

    def in_flight(self) -> int:
        """Keys handed out and not yet ``done``."""
        with self._cond:
            return len(self._processing)

    def stats(self) -> meter.Stats:
        """Counts and ages for client-go's ``workqueue_*`` metrics, read at scrape time."""
        with self._cond:
            now = self._clock.now()
            ready = sum(1 for entry in self._pending.values() if entry.due <= now)
            return self._meter.stats(now=now, ready=ready)

    # -- internals (caller holds self._cond) ---------------------------------

    def _put(
        self, key: ObjectKey, *, priority: Priority, due: float, why: trigger.Trigger | None
    ) -> None:
        if self._shutting_down:
            return
        why = why or trigger.OTHER
        now = self._clock.now()
        old = self._pending.get(key)
        held = self._quiet.added(key, now=now, busy=key in self._processing) if due <= now else None
        if old is not None and held is not None:  # one more edit of a burst: later, once quiet
            priority, why = max(old.priority, priority), old.why.absorb()
            due, old = max(held, old.due), None
        if old is not None:
            # The add that decides when the key runs names the run; the others are counted,
            # but not a future resync or requeue (the run re-adds its own): it is not why
            # this run happens.
            if priority > old.priority or due < old.due:
                why = dataclasses.replace(why, folded=old.why.folded + (old.due <= now))
            else:
                why = old.why.absorb() if due <= now else old.why
            priority = max(old.priority, priority)
            due = min(old.due, due)
            if (priority, due) == (old.priority, old.due):
                # Same stamp: the heap tuples pointing at the entry stay valid.
                self._pending[key] = dataclasses.replace(old, why=why)
                return
        entry = _Entry(priority=priority, due=due, stamp=next(self._stamps), why=why)
        self._pending[key] = entry
        if due > self._clock.now():
            if len(self._waiting) > 2 * len(self._pending) + 64:
                # Every event between two reconcile periods strands the old
                # delayed tuple; drop stale ones so a busy queue stays small.
                self._waiting = [t for t in self._waiting if self._current(t[2], t[1])]
                heapq.heapify(self._waiting)
            heapq.heappush(self._waiting, (due, entry.stamp, key))
            if self._waiting[0][1] == entry.stamp:
                # A new earliest due time: getters waiting for a later one re-plan.
                self._cond.notify_all()
        elif key not in self._processing:  # else done() releases it
            heapq.heappush(self._ready, (-priority, due, entry.stamp, key))
            self._cond.notify()

    def _current(self, key: ObjectKey, stamp: int) -> _Entry | None:
        entry = self._pending.get(key)
        return entry if entry is not None and entry.stamp == stamp else None

    def _promote(self, now: float) -> None:
        """Move entries whose time has come from the waiting heap to the ready heap."""
        while self._waiting and self._waiting[0][0] <= now:
            _, stamp, key = heapq.heappop(self._waiting)
            entry = self._current(key, stamp)
            if entry is not None and key not in self._processing:
                heapq.heappush(self._ready, (-entry.priority, entry.due, stamp, key))

    def _count_retry(self) -> None:
        if not self._shutting_down:
            self._meter.retried()

    def _pop_ready(self, now: float) -> ObjectKey | None:
        while self._ready:
            _, _, stamp, key = heapq.heappop(self._ready)
            entry = self._current(key, stamp)
            # A processing key's entry waits for done(); never two workers on one key.
            if entry is None or key in self._processing:
                continue
            del self._pending[key]
            self._quiet.taken(key)
            self._processing[key] = entry.priority
            self._taken[key] = entry.why
            self._meter.handed_out(key, now=now, due=entry.due)
            return key
        return None
