"""Consistent hashing: balance, and how few keys move when one member joins or leaves."""

from __future__ import annotations

import pytest

from runner.operations.sharding import Ring

KEYS = [f"tests.dev/Probe/ns-{i % 7}/cr-{i}" for i in range(6000)]


def owners(ring: Ring) -> dict[str, str | None]:
    return {key: ring.owner(key) for key in KEYS}


def test_empty_ring_owns_nothing() -> None:
    assert Ring([]).owner("a/b") is None


def test_same_members_same_owner_in_any_order() -> None:
    first = owners(Ring(["a", "b", "c"]))
    second = owners(Ring(["c", "a", "b", "a"]))
    assert first == second, "expected the assignment to depend only on the set of members"


@pytest.mark.parametrize("count", [pytest.param(n, id=f"{n}-members") for n in (2, 3, 4, 8)])
def test_every_member_owns_about_its_share(count: int) -> None:
    members = [f"replica-{i}" for i in range(count)]
    found = owners(Ring(members))
    for member in members:
        share = sum(1 for owner in found.values() if owner == member) / len(KEYS)
        assert abs(share - 1 / count) < 0.3 / count, (
            f"expected {member} to own about 1/{count} of the keys; saw {share:.3f}"
        )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(["a", "b", "c"], ["a", "b", "c", "d"], id="3-to-4"),
        pytest.param(["a", "b", "c"], ["a", "b"], id="3-to-2"),
        pytest.param(["a", "b"], ["a", "b", "c", "d"][:3], id="2-to-3"),
        pytest.param([f"r{i}" for i in range(10)], [f"r{i}" for i in range(9)], id="10-to-9"),
    ],
)
def test_one_membership_change_moves_about_one_nth(before: list[str], after: list[str]) -> None:
    old, new = owners(Ring(before)), owners(Ring(after))
    moved = [key for key in KEYS if old[key] != new[key]]
    changed = set(before) ^ set(after)
    # Only keys of the member that left, or keys going to the member that joined, move.
    assert all(old[key] in changed or new[key] in changed for key in moved), (
        "expected only keys of the joining or leaving member to move"
    )
    expected = 1 / max(len(before), len(after))
    share = len(moved) / len(KEYS)
    assert abs(share - expected) < 0.3 * expected, (
        f"expected about {expected:.3f} of the keys to move; saw {share:.3f}"
    )
