"""Waiting on a condition with a deadline: how the dev cluster synchronises with its
processes (never with a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.05) -> bool:
    """Call ``predicate`` until it is true (→ True) or ``timeout`` seconds pass (→ False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(interval, remaining))
