"""/healthz fails (500 and a reason) when a worker is stuck well past its reconcile
timeout or an informer stopped making progress; it answers 200 otherwise."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from runner.kube.types import GVK, ObjectKey
from runner.operations import health
from runner.queue import trigger, workqueue
from runner.reconcile import controller, reconciler
from runner.watch import source

NOW = 100_000.0
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")


@dataclass
class FakeWorkers:
    name: str = "memcached-controller"
    started: list[float] = field(default_factory=list)

    def busy_since(self) -> list[float]:
        return list(self.started)


@dataclass
class FakeResource:
    plural: str = "memcacheds"


@dataclass
class FakeInformer:
    activity: float
    resource: FakeResource = field(default_factory=FakeResource)
    namespace: str | None = "ns"

    def last_activity(self) -> float:
        return self.activity


@pytest.fixture
def running_thread() -> Iterator[threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    yield thread
    stop.set()
    thread.join()


def watcher(informer: FakeInformer, thread: threading.Thread) -> health.Watcher:
    return health.Watcher(informer=cast(source.Informer, informer), thread=thread)


@pytest.mark.parametrize(
    ("running_for", "timeout", "stuck"),
    [
        pytest.param(4000.0, 3600.0, True, id="past-timeout-and-grace"),
        pytest.param(3900.0, 3600.0, False, id="within-grace"),
        pytest.param(200.0, 100.0, True, id="short-timeout-60s-grace"),
        pytest.param(150.0, 100.0, False, id="short-timeout-within-grace"),
        pytest.param(1e6, None, False, id="no-timeout"),
    ],
)
def test_a_worker_stuck_past_its_timeout_fails_liveness(
    running_for: float, timeout: float | None, stuck: bool
) -> None:
    workers = FakeWorkers(started=[NOW - 5.0, NOW - running_for])
    reason = health.problem(workers=[(workers, timeout)], watchers=[], now=NOW)
    if stuck:
        assert reason is not None and "memcached-controller" in reason, (
            f"expected a reason naming the controller, saw {reason!r}"
        )
    else:
        assert reason is None, f"expected live, saw {reason!r}"


@pytest.mark.parametrize(
    ("silent_for", "stalled"),
    [
        pytest.param(30.0, False, id="recent-activity"),
        pytest.param(health.STALL_AFTER + 1, True, id="silent-too-long"),
    ],
)
def test_a_silent_informer_fails_liveness(
    silent_for: float, stalled: bool, running_thread: threading.Thread
) -> None:
    informer = FakeInformer(activity=NOW - silent_for)
    reason = health.problem(workers=[], watchers=[watcher(informer, running_thread)], now=NOW)
    if stalled:
        assert reason is not None and "memcacheds in ns" in reason, (
            f"expected a reason naming the informer, saw {reason!r}"
        )
    else:
        assert reason is None, f"expected live, saw {reason!r}"


def test_an_informer_whose_thread_ended_fails_liveness() -> None:
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    reason = health.problem(
        workers=[], watchers=[watcher(FakeInformer(activity=NOW), ended)], now=NOW
    )
    assert reason is not None and "thread ended" in reason, f"saw {reason!r}"


def test_run_timeout_prefers_the_watch_then_the_settings() -> None:
    @dataclass
    class Owner:
        reconcile_timeout: float | None

    assert health.run_timeout(Owner(600.0), Owner(30.0)) == 30.0
    assert health.run_timeout(Owner(600.0), Owner(None)) == 600.0
    assert health.run_timeout(Owner(0.0), Owner(None)) is None, "0 means no limit"
    assert health.run_timeout(object(), object()) is None


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def test_healthz_answers_500_with_the_reason() -> None:
    workers = FakeWorkers(started=[NOW - 10_000.0])
    server = health.serve(
        ("127.0.0.1", 0),
        handler=health.handler_for(
            ready=lambda: True,
            live=lambda: health.problem(workers=[(workers, 3600.0)], watchers=[], now=NOW),
        ),
        name="health",
    )
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        stuck = get(f"{base}/healthz")
        workers.started.clear()
        healthy = get(f"{base}/healthz")
        ready = get(f"{base}/readyz")
    finally:
        server.shutdown()
    assert stuck[0] == 500 and "memcached-controller" in stuck[1], f"saw {stuck}"
    assert healthy == (200, "ok\n"), f"expected 200 once nothing is stuck, saw {healthy}"
    assert ready == (200, "ok\n"), f"expected /readyz unchanged, saw {ready}"


class BlockingReconciler:
    gvk = MEMCACHED

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def reconcile(
        self, request: reconciler.Request, *, why: trigger.Trigger = trigger.OTHER
    ) -> reconciler.Result:
        self.entered.set()
        self.release.wait(10)
        return reconciler.Result()


def test_the_controller_reports_when_each_running_reconcile_started() -> None:
    blocking = BlockingReconciler()
    ctrl = controller.Controller(
        reconciler=cast(reconciler.Reconciler, blocking),
        work_queue=workqueue.WorkQueue(),
        workers=2,
    )
    ctrl.start()
    try:
        assert ctrl.busy_since() == [], "expected no reconcile running before any key"
        before = time.monotonic()
        ctrl.queue.add(ObjectKey("ns/a"))
        assert blocking.entered.wait(5), "expected the reconcile to start"
        busy = ctrl.busy_since()
        assert len(busy) == 1 and before <= busy[0] <= time.monotonic(), (
            f"expected one start time after {before}, saw {busy}"
        )
        blocking.release.set()
        ctrl.queue.shutdown()
    finally:
        blocking.release.set()
        assert ctrl.stop(timeout=5), "expected the workers to end"
    left = ctrl.busy_since()
    assert left == [], f"expected nothing running after the reconcile, saw {left}"


class SlotWaitingReconciler(BlockingReconciler):
    """Waits for a run slot (as the reconciler tells the controller), then runs."""

    on_slot_wait: Any

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.slot = threading.Event()
        self.ran = threading.Event()

    def reconcile(
        self, request: reconciler.Request, *, why: trigger.Trigger = trigger.OTHER
    ) -> reconciler.Result:
        self.on_slot_wait(True)
        self.waiting.set()
        self.slot.wait(10)
        self.on_slot_wait(False)
        self.ran.set()
        self.release.wait(10)
        return reconciler.Result()


def test_the_wait_for_a_run_slot_is_left_out_of_liveness() -> None:
    waiting = SlotWaitingReconciler()
    ctrl = controller.Controller(
        reconciler=cast(reconciler.Reconciler, waiting), work_queue=workqueue.WorkQueue(), workers=1
    )
    ctrl.start()
    try:
        ctrl.queue.add(ObjectKey("ns/a"))
        assert waiting.waiting.wait(5), "expected the reconcile to wait for a slot"
        far_later = time.monotonic() + 1e6
        assert health.stuck(workers=ctrl, timeout=60, now=far_later) is None, (
            f"a worker waiting for a slot counted as stuck: busy since {ctrl.busy_since()}"
        )
        got_slot = time.monotonic()
        waiting.slot.set()
        assert waiting.ran.wait(5), "expected the run after the slot"
        (busy,) = ctrl.busy_since()
        assert got_slot <= busy <= time.monotonic(), (
            f"expected the clock restarted when the slot came ({got_slot}), saw {busy}"
        )
        waiting.release.set()
        ctrl.queue.shutdown()
    finally:
        waiting.slot.set()
        waiting.release.set()
        assert ctrl.stop(timeout=5), "expected the workers to end"
