"""The shard gate's fence: stop the process when its runs outlive its claims.

Part of the shard gate (:mod:`runner.operations.sharding.shards`). A replica
starts nothing once ``renew_deadline`` has passed since its last successful
Lease write, and must exit if runs are still going then, so they end before any
other replica may count its claims as expired. The rounds check that after
each round; the fence checks it on a timer thread of its own, so it fires on
time even while a round is blocked in a request to a silent API server.
``on_fenced`` is called once, whichever of the two sees it first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from runner.base.clock import Clock

REASON = "shard Lease not renewed within the renew deadline"


class Fence:
    """Fires ``on_fenced`` once when the gate reports itself ``overdue``.

    ``deadline`` gives the renew deadline of the latest successful write while it
    has not passed (else None: only a renewal, which wakes the fence, can make
    the gate overdue again).
    """

    def __init__(
        self,
        *,
        clock: Clock,
        overdue: Callable[[], bool],
        deadline: Callable[[], float | None],
    ) -> None:
        self._clock = clock
        self._overdue = overdue
        self._deadline = deadline
        # Wakes the fence when a renewal moved the deadline or the rounds stopped.
        self._wake = threading.Condition()
        self._lock = threading.Lock()
        self._fired = False  # on_fenced was called (once only)

    def wake(self) -> None:
        """The deadline moved, or ``stop`` was set: look again."""
        with self._wake:
            self._wake.notify_all()

    def fire(self, reason: str, on_fenced: Callable[[str], None]) -> None:
        """Call ``on_fenced`` unless it was called already."""
        with self._lock:
            if self._fired:
                return
            self._fired = True
        on_fenced(reason)

    def start(self, stop: threading.Event, *, on_fenced: Callable[[str], None]) -> None:
        """Run :meth:`watch` on a thread of its own."""
        threading.Thread(
            target=self.watch,
            args=(stop,),
            kwargs={"on_fenced": on_fenced},
            daemon=True,
            name="shards-fence",
        ).start()

    def watch(self, stop: threading.Event, *, on_fenced: Callable[[str], None]) -> None:
        """Until ``stop`` (noticed at the next :meth:`wake`): wait for the renew deadline
        and fire if runs are still going then, whatever the rounds are blocked in."""
        with self._wake:
            while not stop.is_set():
                if self._overdue():
                    break
                with self._lock:
                    if self._fired:  # by the rounds' thread
                        return
                self._clock.wait_until(self._wake, self._deadline())
            else:
                return
        self.fire(REASON, on_fenced)
