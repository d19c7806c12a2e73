"""Per-key exponential backoff: how long a failing key waits before its next try.

Flow: watch → **queue** → reconcile → ansible → status. The work queue asks it
for the delay of each rate-limited retry (client-go's per-item exponential
failure rate limiter) and tells it to forget a key that succeeded or asked for
its own requeue. It holds no lock: the work queue calls it under its own.
"""

from __future__ import annotations

from runner.kube.types import ObjectKey


class Backoff:
    """Failures counted per key; the delay doubles with each, up to a cap.

    Defaults differ from controller-runtime's 5 ms → 1000 s on purpose: each
    retry costs about 0.6 CPU-seconds of Ansible, so with a 5 ms base the first
    eight retries would all land within about a second, burning CPU on a failure
    that usually needs a human or another object to change. 1 s → 300 s keeps a
    failing CR cheap and still retries it within five minutes.
    """

    def __init__(self, *, base_delay: float = 1.0, max_delay: float = 300.0) -> None:
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[ObjectKey, int] = {}

    def fail(self, key: ObjectKey) -> tuple[float, int]:
        """Count one failure of ``key``: the delay before its retry, and which attempt that is."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # min() on the exponent first: 2**1100 would overflow a float.
        delay = min(self._base_delay * 2.0 ** min(failures, 64), self._max_delay)
        return delay, failures + 1

    def failures(self, key: ObjectKey) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: ObjectKey) -> None:
        self._failures.pop(key, None)
