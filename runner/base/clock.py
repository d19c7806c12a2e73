"""Time, behind one seam, so the queue's timing can be tested without sleeping.

Sits beside the flow watch → queue → reconcile → ansible → status: the queue
asks it when delayed keys are due and blocks on it, status asks it for the
wall time stamped into conditions. Production uses :class:`MonotonicClock`;
tests use :class:`FakeClock`, whose :meth:`FakeClock.advance` wakes every
thread blocked in :meth:`Clock.wait_until`, so "wait until T or until notified"
needs no real timeout.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wall(self) -> datetime:
        """The current wall time, timezone-aware UTC."""
        ...

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        """Block on ``condition`` (held by the caller) until notified or ``now() >= deadline``.

        ``deadline`` is in :meth:`now` seconds; ``None`` waits for a notification
        only. Wake-ups may be spurious: callers re-check their predicate in a loop.
        """
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and the system's UTC wall time."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            condition.wait()
        else:
            condition.wait(max(0.0, deadline - time.monotonic()))


class FakeClock:
    """A clock that moves only when a test calls :meth:`advance`.

    Waiters never time out on their own: a deadline is reached only through
    :meth:`advance`, which then notifies every condition currently waited on.
    """

    def __init__(
        self, *, start: float = 0.0, wall: datetime = datetime(2024, 1, 1, tzinfo=UTC)
    ) -> None:
        self._now = start
        self._wall = wall
        # Guards the time and the waiter registry. Lock order: a caller's
        # condition, then this lock; advance() releases it before taking any
        # condition, so the two never deadlock.
        self._lock = threading.Condition()
        self._waiters: Counter[threading.Condition] = Counter()

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        with self._lock:
            return self._wall

    def set_wall(self, wall: datetime) -> None:
        with self._lock:
            self._wall = wall

    def advance(self, seconds: float) -> None:
        """Move both clocks forward and wake every waiter so it re-checks its deadline."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back (advance by {seconds})")
        with self._lock:
            self._now += seconds
            self._wall += timedelta(seconds=seconds)
            conditions = list(self._waiters)
        for condition in conditions:
            # Blocks until the waiter is inside condition.wait(), so the
            # notification cannot fall between its registration and its wait.
            with condition:
                condition.notify_all()

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        with self._lock:
            # Checked under the lock advance() takes: either advance() already
            # moved time (seen here) or it will see this registration.
            if deadline is not None and self._now >= deadline:
                return
            self._waiters[condition] += 1
            self._lock.notify_all()
        try:
            condition.wait()
        finally:
            with self._lock:
                self._waiters[condition] -= 1
                if self._waiters[condition] <= 0:
                    del self._waiters[condition]

    def waiting(self) -> int:
        """How many threads are blocked in :meth:`wait_until` right now."""
        with self._lock:
            return self._waiters.total()

    def await_waiters(self, count: int, *, timeout: float = 5.0) -> bool:
        """Block (in real time, at most ``timeout``) until ``count`` threads are waiting.

        Lets a test know a getter is really blocked before it acts, without sleeping.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._waiters.total() >= count, timeout)
