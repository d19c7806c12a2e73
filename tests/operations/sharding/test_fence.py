"""The shard gate's fence: it fires at the renew deadline even while a round is
blocked in a Lease request, and every Lease call is bounded by the time left."""

from __future__ import annotations

import threading

import pytest

from runner.kube.types import ObjectKey
from tests.operations.sharding.fakes import FakeLeases
from tests.operations.sharding.test_handover import DEADLINE, KEYS, KIND, Group


@pytest.mark.parametrize(
    "running",
    [pytest.param(True, id="runs-going-exit"), pytest.param(False, id="idle-no-exit")],
)
def test_the_fence_fires_while_a_round_hangs_in_a_request(running: bool) -> None:
    group = Group()
    a = group.add("a")
    group.rounds(1)  # renewed at 0
    if running:
        assert a.begin(KIND, KEYS[0]), "expected a lone replica to start its key"
    fake = a._leases
    assert isinstance(fake, FakeLeases)
    write = fake.write
    timeouts: list[float | None] = []
    hanging, let_go = threading.Event(), threading.Event()

    def hanging_write(
        *, view: tuple[str, ...], take_over: bool = False, timeout: float | None = None
    ) -> None:
        timeouts.append(timeout)
        hanging.set()
        let_go.wait(10)
        write(view=view, take_over=take_over, timeout=timeout or 0.0)

    fake.write = hanging_write  # type: ignore[method-assign]
    fenced = threading.Event()
    stop = threading.Event()
    group.clock.advance(2)
    rounds = threading.Thread(
        target=a.run,
        args=(stop,),
        kwargs={"enqueue": lambda items: None, "on_fenced": lambda reason: fenced.set()},
        daemon=True,
    )
    rounds.start()
    try:
        assert hanging.wait(5), "expected the round to send its renewal"
        assert group.clock.await_waiters(1), "expected the fence to wait for the deadline"
        group.clock.advance(DEADLINE - 2 - 0.5)
        assert group.clock.await_waiters(1), "expected the fence to wait on"
        assert not fenced.is_set(), "expected no fencing before the renew deadline"
        group.clock.advance(1)
        if running:
            assert fenced.wait(5), "expected fencing at the deadline though the round hangs"
        else:
            assert group.clock.await_waiters(1), "expected the fence to wait for a renewal"
            assert not fenced.is_set(), "expected no fencing with no run going"
        assert not a.begin(KIND, ObjectKey(KEYS[1])), "expected no start past the deadline"
        assert timeouts == [pytest.approx(DEADLINE - 2)], (
            f"expected the renewal bounded by the {DEADLINE - 2}s left; saw {timeouts}"
        )
    finally:
        let_go.set()
        stop.set()
        rounds.join(5)
    assert not rounds.is_alive(), "expected the rounds to stop"
