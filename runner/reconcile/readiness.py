"""When a CR's runs stop being worth calling InProgress: kstatus' Stalled, from its failures.

Part of one reconcile (watch → queue → reconcile → ansible → **status**). The kstatus
conditions (:mod:`runner.status.kstatus`) need two judgements the status stage cannot
make alone, both about the runs of the CR's current generation:

- a **permanent** failure: a run whose failed tasks are all ``assert`` tasks (the role
  refused its input, an invalid spec), or an annotation the runner cannot parse. The
  same generation would fail the same way, so the CR is Stalled at once;
- a failure that **keeps coming**: the runs of one generation failed often enough that
  the queue's backoff (``--backoff-base`` doubling up to ``--backoff-max``, as
  :class:`runner.queue.backoff.Backoff` computes it) waits its cap before the next.

The retries go on either way (the controller's result semantics do not change);
Stalled only tells readers not to wait. A success or a new generation starts over.
Counts live in memory, one entry per failing CR: a restart counts again from zero.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from runner.ansible import events
from runner.status import kstatus

#: The modules whose failure means "the input is wrong": retrying cannot help.
REFUSING_ACTIONS = frozenset({"assert", "ansible.builtin.assert", "ansible.legacy.assert"})
_MAX_TRACKED = 10_000  # failing CRs remembered at once, per watch


def permanent(failed: Sequence[events.FailedTask]) -> bool:
    """Whether a run's failed tasks all refused their input (``assert``)."""
    return bool(failed) and all(task.action in REFUSING_ACTIONS for task in failed)


class Failures:
    """Consecutive failed runs per CR (by uid) at one generation, and what they mean."""

    def __init__(self, *, base: float, cap: float) -> None:
        self._base = max(base, 0.0)
        self._cap = max(cap, 0.0)
        self._lock = threading.Lock()
        self._by_uid: OrderedDict[str, tuple[object, int]] = OrderedDict()

    def failed(self, uid: str, *, generation: object) -> tuple[int, float]:
        """Count one failure: how many in a row at this generation, and the retry's delay."""
        with self._lock:
            seen, count = self._by_uid.pop(uid, (generation, 0))
            count = count + 1 if seen == generation else 1
            self._by_uid[uid] = (generation, count)
            while len(self._by_uid) > _MAX_TRACKED:
                self._by_uid.popitem(last=False)
        return count, self.delay(count)

    def succeeded(self, uid: str) -> None:
        with self._lock:
            self._by_uid.pop(uid, None)

    def delay(self, count: int) -> float:
        """The backoff before the retry after ``count`` failures (the queue's formula)."""
        return min(self._base * 2.0 ** min(count - 1, 64), self._cap)

    def capped(self, count: int) -> bool:
        """Whether the retry after ``count`` failures waits the backoff's cap."""
        return self.delay(count) >= self._cap


def verdict(
    failures: Failures, *, uid: str, generation: object, failed: Sequence[events.FailedTask]
) -> tuple[str | None, str]:
    """After a failed run: Stalled's reason (None: not stalled), and when the next run comes."""
    count, delay = failures.failed(uid, generation=generation)
    retry = f"retrying in {delay:g}s (failure {count} in a row)"
    if permanent(failed):
        return kstatus.REASON_INVALID, retry
    if failures.capped(count):
        return kstatus.REASON_BACKOFF_CAPPED, retry
    return None, retry
