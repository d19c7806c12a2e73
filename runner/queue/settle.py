"""When a burst's follow-up run may start: after the edits stop.

Flow: watch → **queue** → reconcile → ansible → status. Used by
:class:`runner.queue.workqueue.WorkQueue` only. Adds that arrive while a key runs
fold into one follow-up (client-go's dirty set). If they were still arriving as
the run ended, the follow-up is *held* until the key has been quiet for
``settle`` seconds, and never more than ``hold_max`` after the run ended. Without
this a fast run (0.3 s warm) chases a burst of edits: 20 patches within a second
cost one run per run time (4 to 6), each reading a spec already stale; with it they
cost the run the first edit started and one that reads the last. A key that is not
running is never held: an edit to an idle object starts its run at once.

Pure bookkeeping of times, with no lock of its own: the queue calls it under its own.
"""

from __future__ import annotations

from runner.kube.types import ObjectKey

#: The runtime's ``settle``: longer than the gap between a client's back-to-back
#: edits, short beside a run.
FOLLOW_UP_SETTLE = 0.5
#: The most a follow-up waits after its run ended, however long the edits go on.
HOLD_MAX = 5.0


class Settle:
    """The last add to each running key, and the held follow-ups' latest start times."""

    def __init__(self, *, settle: float, hold_max: float) -> None:
        self._settle = settle
        self._hold_max = hold_max
        self._last_add: dict[ObjectKey, float] = {}  # running key -> its last immediate add
        self._held: dict[ObjectKey, float] = {}  # held follow-up -> latest time it waits to

    def added(self, key: ObjectKey, *, now: float, busy: bool) -> float | None:
        """``key`` was added, due now. ``busy`` (running): its follow-up is dirty (None).
        Held: when the follow-up may start now, at the earliest. Else None."""
        if busy:
            self._last_add[key] = now
            return None
        until = self._held.get(key)
        return None if until is None else min(now + self._settle, until)

    def released(self, key: ObjectKey, *, now: float) -> float | None:
        """The key's run ended with a follow-up due: when that may start, if it is held."""
        last = self._last_add.pop(key, None)
        if last is None or now - last >= self._settle:
            return None  # quiet for long enough already: it runs at once
        self._held[key] = now + self._hold_max
        return last + self._settle

    def taken(self, key: ObjectKey) -> None:
        """The key was handed to a worker: nothing is held for it any more."""
        self._held.pop(key, None)
        self._last_add.pop(key, None)
