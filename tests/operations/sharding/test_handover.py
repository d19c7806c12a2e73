"""The shard gate's protocol with fake Leases and a fake clock: ownership is
exclusive at every step of a membership change, claims expire only after the
lease duration, a release hands over at once, and a replica that cannot renew
starts nothing."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from runner.base.clock import FakeClock
from runner.kube.types import GVK, ObjectKey
from runner.operations.sharding import LeaseHeldError, Shards
from tests.operations.sharding.fakes import FakeLeases, Store

KIND = GVK("tests.dev", "v1", "Probe")
KEYS = [ObjectKey(f"ns/cr-{i}") for i in range(60)]
DURATION, DEADLINE, RETRY = 10.0, 7.0, 1.0


class Group:
    """Replicas sharing one fake Lease store and one fake clock."""

    def __init__(self) -> None:
        self.store = Store()
        self.clock = FakeClock()
        self.replicas: dict[str, Shards] = {}

    def add(self, name: str) -> Shards:
        shards = Shards(
            leases=FakeLeases(self.store, replica=name, duration=DURATION),
            replica=name,
            clock=self.clock,
            lease_duration=DURATION,
            renew_deadline=DEADLINE,
            retry_period=RETRY,
        )
        for key in KEYS:
            shards.seen(KIND, key, present=True)
        self.replicas[name] = shards
        shards.join()
        return shards

    def rounds(self, count: int = 1, *, names: list[str] | None = None) -> None:
        for _ in range(count):
            for name in names or list(self.replicas):
                self.replicas[name].tick()

    def startable(self) -> dict[ObjectKey, list[str]]:
        """Which replicas would start each key now (probing begin, then ending at once)."""
        found: dict[ObjectKey, list[str]] = {key: [] for key in KEYS}
        for name, shards in self.replicas.items():
            for key in KEYS:
                if shards.begin(KIND, key):
                    shards.end(KIND, key)
                    found[key].append(name)
        return found


def shares(startable: dict[ObjectKey, list[str]]) -> Counter[str]:
    return Counter(names[0] for names in startable.values() if len(names) == 1)


def assert_exclusive(startable: dict[ObjectKey, list[str]]) -> None:
    doubled = {key: names for key, names in startable.items() if len(names) > 1}
    assert not doubled, f"expected at most one replica per key; saw {doubled}"


def assert_complete(startable: dict[ObjectKey, list[str]]) -> None:
    assert_exclusive(startable)
    orphans = [key for key, names in startable.items() if not names]
    assert not orphans, f"expected every key to have a replica; saw none for {orphans}"


def test_three_replicas_split_the_keys() -> None:
    group = Group()
    for name in ("a", "b", "c"):
        group.add(name)
    group.rounds(2)
    startable = group.startable()
    assert_complete(startable)
    counts = shares(startable)
    assert all(10 <= counts[name] <= 30 for name in "abc"), (
        f"expected each of 3 replicas to own roughly 20 of 60 keys; saw {dict(counts)}"
    )


def test_a_replica_only_starts_keys_once_its_view_is_published_and_read() -> None:
    group = Group()
    shards = Shards(
        leases=FakeLeases(group.store, replica="a", duration=DURATION),
        replica="a",
        clock=group.clock,
        lease_duration=DURATION,
        renew_deadline=DEADLINE,
        retry_period=RETRY,
    )
    assert not shards.begin(KIND, KEYS[0]), "expected nothing to start before the first round"


def test_a_joining_replica_waits_for_the_running_key_it_takes_over() -> None:
    group = Group()
    a = group.add("a")
    group.rounds(2)
    running = list(KEYS)
    for key in running:
        assert a.begin(KIND, key), f"expected a alone to start {key}"
    b = group.add("b")
    group.rounds(3)
    taken = [key for key in KEYS if b.owns(KIND, key)]
    assert taken, "expected b to own some keys under the new view"
    assert not any(b.begin(KIND, key) for key in taken), (
        "expected b to start none of its keys while a still runs them"
    )
    for key in running:
        a.end(KIND, key)
    group.rounds(2)
    startable = group.startable()
    assert_complete(startable)
    assert sorted(k for k, names in startable.items() if names == ["b"]) == sorted(taken), (
        "expected b to start exactly the keys the new view gives it once a released them"
    )


def test_a_killed_replica_s_keys_move_only_after_its_lease_expires() -> None:
    group = Group()
    for name in ("a", "b", "c"):
        group.add(name)
    group.rounds(2)
    before = group.startable()
    orphaned = [key for key, names in before.items() if names == ["c"]]
    del group.replicas["c"]  # kill -9: no release, no more renewals
    group.rounds(1)  # a and b see c's last renewal now: its expiry counts from here
    group.clock.advance(DURATION - 1)
    group.rounds(1)
    still = group.startable()
    assert all(not still[key] for key in orphaned), (
        "expected c's keys to stay unowned while its Lease has not expired"
    )
    group.clock.advance(2)
    group.rounds(2)
    after = group.startable()
    assert_complete(after)


def test_a_released_lease_hands_over_at_the_next_round() -> None:
    group = Group()
    for name in ("a", "b"):
        group.add(name)
    group.rounds(2)
    group.replicas.pop("b").release()
    group.rounds(1)
    startable = group.startable()
    assert_complete(startable)
    assert set(shares(startable)) == {"a"}, f"expected a to own every key; saw {shares(startable)}"


def test_a_replica_that_cannot_renew_starts_nothing_and_is_fenced_if_running() -> None:
    group = Group()
    a = group.add("a")
    group.rounds(1)
    assert a.begin(KIND, KEYS[0]), "expected a lone replica to start its key"
    group.store.failing.add("a")
    group.clock.advance(DEADLINE - 0.5)
    group.rounds(1)
    assert a.begin(KIND, KEYS[1]) is False, "expected no start after a failed renewal"
    assert not a.overdue(), "expected no fencing before the renew deadline"
    group.clock.advance(1)
    assert a.overdue(), "expected fencing: the deadline passed with a run going"
    a.end(KIND, KEYS[0])
    assert not a.overdue(), "expected no fencing once nothing runs"


def test_a_second_process_with_the_same_replica_id_is_refused() -> None:
    group = Group()
    group.add("a")
    group.rounds(1)
    twin = FakeLeases(group.store, replica="a", duration=DURATION)
    with pytest.raises(LeaseHeldError):
        twin.write(view=("a",), timeout=DEADLINE)
    group.replicas["a"]._leases = twin  # the twin's rounds: it sees the Lease is not its own
    with pytest.raises(LeaseHeldError):
        group.replicas["a"].tick()


def test_a_restarted_replica_waits_for_its_previous_lease_to_expire() -> None:
    group = Group()
    group.add("a")
    group.rounds(1)
    del group.replicas["a"]  # killed; restarted with the same id
    again = group.add("a")
    assert not again.begin(KIND, KEYS[0]), "expected the restart to wait for the old Lease"
    group.clock.advance(DURATION + 1)
    again.join()
    again.tick()
    assert again.begin(KIND, KEYS[0]), "expected the restart to own its keys after expiry"


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed-{seed}") for seed in range(12)])
def test_no_key_ever_runs_on_two_replicas_across_joins_leaves_and_kills(seed: int) -> None:
    rng = random.Random(seed)
    group = Group()
    running: dict[str, set[ObjectKey]] = {}
    names = iter(f"r{i}" for i in range(100))
    for _ in range(3):
        name = next(names)
        group.add(name)
        running[name] = set()
    for _ in range(400):
        action = rng.random()
        live = list(group.replicas)
        if action < 0.35 and live:
            group.replicas[rng.choice(live)].tick()
        elif action < 0.65 and live:
            name = rng.choice(live)
            key = rng.choice(KEYS)
            if key not in running[name] and group.replicas[name].begin(KIND, key):
                others = [n for n, keys in running.items() if key in keys]
                assert not others, f"expected {name} alone to run {key}; {others} run it too"
                running[name].add(key)
        elif action < 0.85 and live:
            name = rng.choice(live)
            if running[name]:
                key = rng.choice(sorted(running[name]))
                running[name].discard(key)
                group.replicas[name].end(KIND, key)
        elif action < 0.9:
            group.clock.advance(rng.uniform(0.1, 2.0))
            for name in list(group.replicas):
                if group.replicas[name].overdue():
                    del group.replicas[name]  # the process exits: its runs end with it
                    running[name] = set()
        elif action < 0.95 and len(live) < 5:
            name = next(names)
            group.add(name)
            running[name] = set()
        elif len(live) > 1:
            name = rng.choice(live)
            shards = group.replicas.pop(name)
            if rng.random() < 0.5 and not running[name]:
                shards.release()  # graceful: runs ended first
            # else kill -9: its runs stop with the process
            running[name] = set()
    # Settle: everything ends, rounds until views agree; then every key has one owner.
    for name, keys in running.items():
        for key in keys:
            if name in group.replicas:
                group.replicas[name].end(KIND, key)
    # A replica sees a dead one's last renewal at its own next round; expiry counts from there.
    group.rounds(1)
    group.clock.advance(DURATION + 1)
    group.rounds(3)
    assert_complete(group.startable())


def test_a_lease_deleted_under_a_replica_stops_its_starts_until_written_again() -> None:
    group = Group()
    a = group.add("a")
    group.rounds(1)
    group.store.leases.pop("a")  # deleted by hand between a's write and its read
    original = group.store.leases.copy()
    fake = a._leases
    assert isinstance(fake, FakeLeases)
    write = fake.write

    def write_then_lose(*, view: tuple[str, ...], take_over: bool = False, timeout: float) -> None:
        write(view=view, take_over=take_over, timeout=timeout)
        group.store.leases.clear()
        group.store.leases.update(original)

    fake.write = write_then_lose  # type: ignore[method-assign]
    a.tick()
    assert not a.begin(KIND, KEYS[0]), "expected no start while a's Lease is not stored"
    fake.write = write  # type: ignore[method-assign]
    a.tick()
    assert a.begin(KIND, KEYS[0]), "expected starts again once a's Lease is written"
