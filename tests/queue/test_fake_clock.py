"""The clock seam the queue blocks on: real waits end at the deadline, fake ones on advance."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from runner.base.clock import FakeClock, MonotonicClock


def test_advance_moves_monotonic_and_wall_time() -> None:
    start = datetime(2030, 5, 1, tzinfo=UTC)
    clock = FakeClock(start=10.0, wall=start)
    clock.advance(2.5)
    assert (clock.now(), clock.wall()) == (12.5, start + timedelta(seconds=2.5))
    clock.set_wall(datetime(2031, 1, 1, tzinfo=UTC))
    assert clock.wall() == datetime(2031, 1, 1, tzinfo=UTC)
    assert clock.now() == 12.5


def test_clock_cannot_go_back() -> None:
    with pytest.raises(ValueError, match="cannot go back"):
        FakeClock().advance(-1)


@pytest.mark.parametrize(
    "clock",
    [pytest.param(FakeClock(start=5.0), id="fake"), pytest.param(MonotonicClock(), id="real")],
)
def test_past_deadline_returns_at_once(clock: FakeClock | MonotonicClock) -> None:
    condition = threading.Condition()
    with condition:
        clock.wait_until(condition, clock.now() - 1)


def test_advance_past_deadline_wakes_the_waiter() -> None:
    clock = FakeClock()
    condition = threading.Condition()
    woke = threading.Event()

    def waiter() -> None:
        with condition:
            clock.wait_until(condition, 3.0)
        woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    assert clock.await_waiters(1)
    clock.advance(3)
    assert woke.wait(timeout=5), "advance() past the deadline did not wake the waiter"
    thread.join(timeout=5)
    assert clock.waiting() == 0


def test_monotonic_clock_is_monotonic_and_utc() -> None:
    clock = MonotonicClock()
    first = clock.now()
    assert clock.now() >= first
    assert clock.wall().tzinfo is UTC
