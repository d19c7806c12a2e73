"""What the work queue tells client-go's ``workqueue_*`` metrics, kept apart from its keys.

Flow: watch → **queue** → reconcile → ansible → status. The work queue reports
each key it hands out and each key a worker releases; this records when each
key was handed out and counts adds and retries, tells an optional
:class:`QueueObserver` how long each key waited once ready and how long a worker
held it, and builds the :class:`Stats` read at scrape time. It holds no lock: the
work queue calls it under its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from runner.kube.types import ObjectKey


class QueueObserver(Protocol):
    """Told, under the queue's lock, about each key handed out and each key released."""

    def queued(self, seconds: float) -> None:
        """A key waited ``seconds`` between becoming ready and being handed out."""

    def worked(self, seconds: float) -> None:
        """A worker held a key ``seconds``, from ``get`` to ``done``."""


@dataclass(frozen=True, slots=True)
class Stats:
    """The queue at one instant, in client-go's workqueue terms."""

    ready: int  # keys due and not handed out (client-go's depth: follow-ups of running keys too)
    adds: int  # keys that became ready since the start (handed out + ready now)
    retries: int  # add_after and add_rate_limited calls (client-go counts every AddAfter)
    unfinished_seconds: float  # summed time the keys handed out now have been held
    longest_running_seconds: float  # how long the oldest key handed out now has been held


class Meter:
    """When each key handed out now was handed out, and the queue's counters."""

    def __init__(self, observer: QueueObserver | None = None) -> None:
        self._observer = observer
        self._started: dict[ObjectKey, float] = {}
        self._handed_out = 0
        self._retries = 0

    def handed_out(self, key: ObjectKey, *, now: float, due: float) -> None:
        self._started[key] = now
        self._handed_out += 1
        if self._observer is not None:
            # Ready since its due time: the add, the delay's end, or a running key's add.
            self._observer.queued(max(0.0, now - due))

    def released(self, key: ObjectKey, *, now: float) -> None:
        started = self._started.pop(key, None)
        if started is not None and self._observer is not None:
            self._observer.worked(max(0.0, now - started))

    def retried(self) -> None:
        self._retries += 1

    def stats(self, *, now: float, ready: int) -> Stats:
        """The counters and the ages of the keys handed out, with ``ready`` keys due now."""
        held = [max(0.0, now - started) for started in self._started.values()]
        return Stats(
            ready=ready,
            # Every key that became ready is either still ready or was handed
            # out, so this never decreases, like client-go's adds counter.
            adds=self._handed_out + ready,
            retries=self._retries,
            unfinished_seconds=sum(held),
            longest_running_seconds=max(held, default=0.0),
        )
