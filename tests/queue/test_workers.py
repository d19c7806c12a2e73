"""Concurrent workers: one key is never held by two; shutdown releases everyone."""

from __future__ import annotations

import threading

from runner.base.clock import FakeClock
from runner.kube.types import ObjectKey
from runner.queue.workqueue import WorkQueue

KEYS = [ObjectKey("ns/a"), ObjectKey("ns/b")]
WORKERS = 4
ROUNDS = 50


def test_never_two_workers_on_one_key() -> None:
    """Each round all workers get() at once while both keys are ready, hold what they
    got across a barrier (so every holder overlaps) while the producer re-adds both
    keys, then call done(). Each key must be held by exactly one worker per round,
    and the re-adds must come back as exactly one follow-up each.
    """
    queue = WorkQueue(clock=FakeClock())
    barrier = threading.Barrier(WORKERS + 1, timeout=5)
    held: list[list[ObjectKey | None]] = [[] for _ in range(ROUNDS)]
    lock = threading.Lock()

    def worker() -> None:
        for round_ in range(ROUNDS):
            barrier.wait()  # round starts: keys are ready
            key = queue.get(timeout=0)
            with lock:
                held[round_].append(key)
            barrier.wait()  # every worker holds its key now
            barrier.wait()  # the producer has re-added both keys
            if key is not None:
                queue.done(key)
            barrier.wait()  # round over

    for key in KEYS:
        queue.add(key)
    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for thread in threads:
        thread.start()
    for _ in range(ROUNDS):
        barrier.wait()
        barrier.wait()
        for key in KEYS:
            queue.add(key)
            queue.add(key)
        barrier.wait()
        barrier.wait()
    for thread in threads:
        thread.join(timeout=5)

    for round_, keys in enumerate(held):
        got = sorted(k for k in keys if k is not None)
        assert got == KEYS, f"round {round_}: expected each key held once, saw {keys}"
    assert queue.depth() == len(KEYS), "the last round's re-adds must wait as one each"


def test_blocked_getters_wait_for_done_then_exactly_one_proceeds() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    key = KEYS[0]
    queue.add(key)
    assert queue.get(timeout=0) == key
    queue.add(key)

    got: list[ObjectKey | None] = []
    arrived = threading.Condition()

    def getter() -> None:
        result = queue.get()
        with arrived:
            got.append(result)
            arrived.notify_all()

    threads = [threading.Thread(target=getter) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert clock.await_waiters(3), "getters never blocked"
    assert not got, f"a processing key was handed out: {got}"

    queue.done(key)
    with arrived:
        assert arrived.wait_for(lambda: got, timeout=5), "done() released no getter"
    queue.shutdown()
    for thread in threads:
        thread.join(timeout=5)
    assert sorted(got, key=str) == [None, None, key], "exactly one getter gets the follow-up"


def test_shutdown_wakes_every_getter() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after(KEYS[0], 60)
    got: list[ObjectKey | None] = []
    threads = [threading.Thread(target=lambda: got.append(queue.get())) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert clock.await_waiters(3), "getters never blocked"
    queue.shutdown()
    for thread in threads:
        thread.join(timeout=5)
    assert not any(t.is_alive() for t in threads), "a getter slept through shutdown"
    assert got == [None, None, None]
    assert queue.shutting_down


def test_after_shutdown_get_returns_none_and_adds_are_dropped() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add(KEYS[0])
    queue.shutdown()
    queue.add(KEYS[1])
    assert queue.get() is None, "no drain: each key would cost an Ansible run"
    assert queue.depth() == 1
