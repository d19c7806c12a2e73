"""The controller names why each reconcile runs: from the watch event that enqueued the
key, or from the previous reconcile's result (requeue_after, retry, resync)."""

from __future__ import annotations

import logging
import threading
from typing import Any, cast

import pytest

from runner.base import errors
from runner.base.clock import FakeClock
from runner.kube import errors as kube_errors
from runner.kube.types import KubeObject
from runner.queue import trigger, workqueue
from runner.reconcile import controller, reconciler
from runner.watch import predicate
from testkit.helpers import wait_for
from tests.runner.support import PROBE


def probe(generation: int, **meta: Any) -> KubeObject:
    return {
        "apiVersion": PROBE.api_version,
        "kind": PROBE.kind,
        "metadata": {"name": "p", "namespace": "ns", "generation": generation, **meta},
        "spec": {"revision": generation},  # a new generation is a new spec
    }


class Recording:
    """A reconciler that records each ``why`` and answers from a script of results."""

    gvk = PROBE

    def __init__(self, script: list[reconciler.Result | Exception]) -> None:
        self.script = script
        self.seen: list[trigger.Trigger] = []
        self.lock = threading.Lock()

    def reconcile(
        self, request: reconciler.Request, *, why: trigger.Trigger = trigger.OTHER
    ) -> reconciler.Result:
        with self.lock:
            self.seen.append(why)
            step = self.script.pop(0) if self.script else reconciler.Result()
        if isinstance(step, Exception):
            raise step
        return step


def make(
    script: list[reconciler.Result | Exception], **queue: Any
) -> tuple[controller.Controller, Recording]:
    fake = Recording(script)
    ctrl = controller.Controller(
        reconciler=cast(reconciler.Reconciler, fake),
        work_queue=workqueue.WorkQueue(**queue),
        workers=1,
    )
    return ctrl, fake


@pytest.mark.parametrize(
    ("event", "kind", "detail"),
    [
        pytest.param(
            predicate.Event(predicate.EventType.ADDED, probe(1)), "created", "", id="created"
        ),
        pytest.param(
            predicate.Event(predicate.EventType.ADDED, probe(1), initial=True),
            "restart",
            "first sight after start-up",
            id="restart",
        ),
        pytest.param(
            predicate.Event(predicate.EventType.MODIFIED, probe(3), old=probe(2)),
            "generation",
            "generation 3",
            id="spec-changed",
        ),
        pytest.param(
            predicate.Event(
                predicate.EventType.MODIFIED, probe(2, annotations={"a": "b"}), old=probe(2)
            ),
            "annotation",
            "",
            id="annotation",
        ),
        pytest.param(
            predicate.Event(
                predicate.EventType.MODIFIED,
                probe(2, deletionTimestamp="2026-01-01T00:00:00Z"),
                old=probe(2),
            ),
            "deleting",
            "",
            id="deletion-started",
        ),
    ],
)
def test_a_watch_event_names_the_run(event: predicate.Event, kind: str, detail: str) -> None:
    ctrl, _ = make([], clock=FakeClock())
    accept = predicate.primary(watch_annotations=True, selector_matches=lambda labels: True)
    ctrl.handler(accept)(event)
    key = ctrl.queue.get(timeout=0)
    assert key is not None, "expected the event to enqueue the object"
    why = ctrl.queue.trigger_of(key)
    assert (str(why.kind), why.detail) == (kind, detail), (
        f"expected trigger {kind!r} ({detail!r}), saw {why}"
    )


def test_the_result_names_the_next_run() -> None:
    """requeue_after from the role → requeue_after; a failure → retry; the reconcile
    period → resync."""
    ctrl, fake = make(
        [
            reconciler.Result(requeue_after=0.01, requested=True),
            reconciler.ReconcileFailed("boom"),
            reconciler.Result(requeue_after=0.01),
            reconciler.Result(),
        ],
        base_delay=0.01,
    )
    ctrl.enqueue(cast(Any, "ns/p"), workqueue.Priority.EVENT, trigger.Trigger(trigger.Kind.CREATED))
    ctrl.start()
    try:
        wait_for(lambda: len(fake.seen), until=lambda n: n >= 4, describe="four reconciles")
    finally:
        ctrl.stop(timeout=5)
    kinds = [str(why.kind) for why in fake.seen[:4]]
    assert kinds == ["created", "requeue_after", "retry", "resync"], (
        f"expected created → requeue_after → retry → resync, saw {kinds}"
    )
    assert fake.seen[2].detail == "attempt 1", f"saw {fake.seen[2]}"


@pytest.mark.parametrize(
    ("error", "traceback"),
    [
        pytest.param(reconciler.ReconcileFailed("a task failed"), False, id="failed-task"),
        pytest.param(errors.ReconcileError("bad annotation"), False, id="reconcile-error"),
        pytest.param(
            kube_errors.ConflictError(status=409, method="PATCH", path="/x", body={}),
            False,
            id="api-conflict",
        ),
        pytest.param(RuntimeError("a bug"), True, id="crash"),
    ],
)
def test_a_traceback_only_when_something_crashed(
    error: Exception, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl, _ = make([error], base_delay=60)
    ctrl.enqueue(cast(Any, "ns/p"), workqueue.Priority.EVENT, trigger.OTHER)
    with caplog.at_level(logging.WARNING, logger="runner.controller"):
        ctrl.start()
        try:
            wait_for(
                lambda: [r for r in caplog.records if r.getMessage() == "reconcile failed"],
                describe="the 'reconcile failed' line",
            )
        finally:
            ctrl.stop(timeout=5)
    (record,) = [r for r in caplog.records if r.getMessage() == "reconcile failed"]
    assert bool(record.exc_info) is traceback, (
        f"expected traceback={traceback} for {error!r}, saw exc_info={record.exc_info}"
    )
