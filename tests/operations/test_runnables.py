"""The manager's runnable groups start in controller-runtime's order, stop in reverse, and
the process leaves through one exit-code decision."""

from __future__ import annotations

import threading

import pytest

from runner.operations import exits, runnables

Group = runnables.Group


class Recorded:
    """A runnable that notes its starts and stops in a shared list."""

    def __init__(self, name: str, seen: list[str], *, starts: bool = True, ends: bool = True):
        self.name, self.seen, self.starts, self.ends = name, seen, starts, ends
        self.clean_told: bool | None = None

    def start(self, stop: threading.Event) -> bool:
        self.seen.append(f"start {self.name}")
        return self.starts

    def stop(self, *, deadline: float, clean: bool) -> bool:
        self.seen.append(f"stop {self.name}")
        self.clean_told = clean
        return self.ends


def test_groups_start_in_order_and_stop_in_reverse() -> None:
    seen: list[str] = []
    groups = runnables.Runnables()
    # Added out of order on purpose: the group, not the call order, decides.
    for group in (Group.WORKERS, Group.CACHES, Group.SERVERS, Group.ELECTION, Group.WEBHOOKS):
        groups.add(group, Recorded(group.value, seen))
    groups.add(Group.LAUNCHERS, Recorded("launchers", seen))
    assert groups.start(threading.Event()), "expected every group started"
    groups.stop(deadline=0.0)
    order = ["servers", "launchers", "webhooks", "caches", "election", "workers"]
    expected = [f"start {n}" for n in order] + [f"stop {n}" for n in reversed(order)]
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_a_stop_while_electing_starts_no_worker_and_the_lease_is_kept_after_a_late_drain() -> None:
    seen: list[str] = []
    groups = runnables.Runnables()
    election = Recorded("election", seen, starts=False)
    groups.add(Group.ELECTION, election)
    groups.add(Group.WORKERS, Recorded("workers", seen, ends=False))
    assert not groups.start(threading.Event()), "expected start to report the stop"
    assert "start workers" not in seen, f"a worker started without leadership: {seen}"
    assert groups.stop(deadline=0.0) is False, "expected an unclean stop (runs outlived it)"
    assert election.clean_told is False, "the election must hear the runs did not end in time"


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        pytest.param(exits.Outcome.STOPPED, 0, id="stopped"),
        pytest.param(exits.Outcome.LOST, 3, id="ownership-lost"),
    ],
)
def test_exit_codes(outcome: exits.Outcome, code: int) -> None:
    assert exits.exit_code(outcome) == code, f"{outcome}: expected {code}"


def test_ownership_lost_ends_at_once_with_3() -> None:
    ended: list[int] = []
    way_out = exits.Exit(stop=threading.Event(), end=ended.append)
    way_out.lost("exiting: leadership lost")
    assert ended == [3], f"expected the process ended with 3, saw {ended}"
