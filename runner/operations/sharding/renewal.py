"""The holder's own deadline: how long its latest Lease write lets it start runs.

Part of the shard gate (:mod:`runner.operations.sharding.shards`). The holder
starts nothing once ``renew_deadline`` (shorter than the Lease duration) has
passed since it *sent* its latest successful write, measured on its own
monotonic clock, and bounds every Lease request by the time left before that
deadline (a whole deadline when none is left: a new try at renewing, which
starts nothing). No lock: the gate reads and sets it under its own, together
with the runs it counts.
"""

from __future__ import annotations

from runner.base.clock import Clock


class Renewal:
    """When the latest successful write was sent, and the deadline it sets."""

    def __init__(self, *, clock: Clock, deadline: float) -> None:
        self._clock = clock
        self.deadline = deadline  # seconds after a write was sent
        self.sent: float | None = None  # None: no write succeeded yet

    def renewed(self, sent: float) -> None:
        """A write sent at ``sent`` succeeded."""
        self.sent = sent

    def valid(self) -> bool:
        return self.sent is not None and self._clock.now() < self.sent + self.deadline

    def until(self) -> float | None:
        """The deadline of the latest successful write, unless it has passed."""
        if self.sent is None or not self.valid():
            return None
        return self.sent + self.deadline

    def budget(self) -> float:
        """The timeout of the next Lease call."""
        left = 0.0 if self.sent is None else self.sent + self.deadline - self._clock.now()
        return left if left > 0 else self.deadline
