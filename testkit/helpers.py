"""Helpers shared by the tests: waiting on a condition, and unique names.

Tests never sleep to synchronise with the cluster; they poll an observation until it
satisfies a condition, with a timeout, and fail saying what they expected and what
they last saw.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    observe: Callable[[], T],
    *,
    describe: str,
    until: Callable[[T], bool] = bool,
    timeout: float = 30.0,
    interval: float = 0.1,
    ignore: tuple[type[Exception], ...] = (),
) -> T:
    """Call ``observe`` until ``until(value)`` holds, and return that value.

    ``describe`` states the expectation ("3 ready replicas"). Exceptions listed in
    ``ignore`` (e.g. a 404 before an object exists) count as "not yet" and are shown
    as the last observation if time runs out. On timeout raises ``AssertionError``::

        expected 3 ready replicas within 30s; last seen: 2
    """
    deadline = time.monotonic() + timeout
    seen: object = "<nothing observed>"
    while True:
        try:
            value = observe()
        except ignore as exc:
            seen = f"{type(exc).__name__}: {exc}"
        else:
            if until(value):
                return value
            seen = value
        if time.monotonic() >= deadline:
            raise AssertionError(f"expected {describe} within {timeout:g}s; last seen: {seen!r}")
        time.sleep(interval)


def unique_name(prefix: str, *, max_length: int = 63) -> str:
    """A DNS-1123 label: ``prefix`` (slugified, truncated) plus a random suffix."""
    slug = re.sub(r"[^a-z0-9]+", "-", prefix.lower()).strip("-") or "t"
    suffix = secrets.token_hex(3)
    return f"{slug[: max_length - len(suffix) - 1].rstrip('-')}-{suffix}"
