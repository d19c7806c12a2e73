"""Workers: take keys from the queue, reconcile them, apply the result semantics.

The result semantics are written once, here, and the workers follow them:

- the reconciler raises  → rate-limited retry (per-key exponential backoff);
- ``requeue_after`` set   → forget the backoff, re-add after that delay;
- success without it      → forget the backoff.

Every branch bumps one ``result`` label of the reconcile counters: ours
(:class:`Outcome`) and controller-runtime's (:class:`Action`, what the worker
did with the key). Because the queue never hands one key to two workers, at
most one reconcile per object runs at any time, whatever the worker count.
In sharded mode a :class:`Gate` also decides which keys enter the queue and
which may start, so that across replicas, too, one object runs in one place.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

from runner.base import errors
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, ObjectKey, object_key
from runner.queue import trigger, workqueue
from runner.reconcile import reconciler, startup
from runner.watch import predicate as predicate_mod
from runner.watch.predicate import Event, EventType, Predicate

log = logging.getLogger("runner.controller")


class Outcome(StrEnum):
    """How the reconcile went (``playbook_operator_reconcile_total``'s ``result``)."""

    SUCCEEDED = "succeeded"
    REQUEUED = "requeue_after"  # the role asked for it with the requeue_after module
    FAILED = "failed"


class Action(StrEnum):
    """What the worker did with the key: controller-runtime's ``result`` label.

    A success with a reconcile period is ``requeue_after``, as in controller-runtime
    (ansible-operator always returns the period); ``success`` is a reconcile that
    asked for nothing, e.g. of an object already gone. controller-runtime's fourth
    value, ``requeue`` (retry with backoff without an error), is never produced.
    """

    SUCCESS = "success"
    ERROR = "error"
    REQUEUE_AFTER = "requeue_after"


class ReconcileObserver(Protocol):
    """Told about matching primary events and finished reconciles (the metrics)."""

    def matched(self, *, gvk: GVK, event: Event) -> None:
        """A watch event of a primary object passed the predicates."""

    def reconciled(
        self, *, controller: str, gvk: GVK, outcome: Outcome, action: Action, seconds: float
    ) -> None:
        """One reconcile finished after ``seconds``."""


class Gate(Protocol):
    """Which keys this process may reconcile.

    Sharded mode: :class:`runner.operations.sharding.Shards`.
    """

    retry_period: float

    def seen(self, gvk: GVK, key: ObjectKey, *, present: bool) -> None:
        """A primary object exists (``present``) or is gone."""

    def owns(self, gvk: GVK, key: ObjectKey) -> bool:
        """Whether the key belongs to this process (events for others' keys are dropped)."""

    def begin(self, gvk: GVK, key: ObjectKey) -> bool:
        """Whether a run of the key may start now; if so, :meth:`end` follows the run."""

    def end(self, gvk: GVK, key: ObjectKey) -> None:
        """The run :meth:`begin` allowed has finished."""


def name_for(gvk: GVK) -> str:
    """ansible-operator's controller name: the lower-cased kind and ``-controller``."""
    return f"{gvk.kind.lower()}-controller"


class Controller:
    """One watched kind: its queue, its workers and its reconciler."""

    def __init__(
        self,
        *,
        reconciler: reconciler.Reconciler,
        work_queue: workqueue.WorkQueue,
        workers: int,
        observer: ReconcileObserver | None = None,
        gate: Gate | None = None,
        spread: startup.Spread | None = None,
    ) -> None:
        self.reconciler = reconciler
        self._gate = gate
        self._spread = spread  # after a restart: when unchanged CRs' first runs come
        self.gvk = reconciler.gvk
        self.queue = work_queue
        self.workers = workers
        self._observer = observer
        self._threads: list[threading.Thread] = []
        # Worker thread → time.monotonic() its current key was taken (the liveness check);
        # infinity while it waits for a run slot, which is not the reconcile's own time.
        self._busy: dict[int, float] = {}
        self._busy_lock = threading.Lock()
        reconciler.on_slot_wait = self._slot_wait

    @property
    def name(self) -> str:
        return name_for(self.gvk)

    def handler(
        self, predicate: Predicate, *, map_keys: Callable[[Event], list[ObjectKey]] | None = None
    ) -> Callable[[Event], None]:
        """An informer handler: filter with ``predicate``, then enqueue the object's key
        (or the keys ``map_keys`` derives, e.g. a child's owners)."""

        def handle(event: Event) -> None:
            if not predicate(event):
                return
            if map_keys is None and self._gate is not None:
                # Only objects the watch selects: the gate enqueues them when they move here.
                present = event.type is not EventType.DELETED
                self._gate.seen(self.gvk, object_key(event.obj), present=present)
            if map_keys is None and self._observer is not None:
                self._observer.matched(gvk=self.gvk, event=event)
            keys = map_keys(event) if map_keys else [object_key(event.obj)]
            priority = workqueue.Priority.RESYNC if event.initial else workqueue.Priority.EVENT
            why = predicate_mod.cause(event) if map_keys is None else trigger.OTHER
            delay = None
            if event.initial and map_keys is None and self._spread is not None:
                delay = self._spread.delay(event.obj)  # None: it runs at once
            for key in keys:
                if self._gate is not None and not self._gate.owns(self.gvk, key):
                    continue  # another replica's object (sharded mode)
                log.debug(
                    "enqueued",
                    extra={
                        "kind": self.gvk.kind,
                        "object": key,
                        "event": event.type.value,
                        "initial": event.initial,
                        "trigger": why.describe(),
                    },
                )
                if delay is not None:
                    self.queue.add_after(key, delay, priority=priority, why=why)
                else:
                    self.queue.add(key, priority=priority, why=why)

        return handle

    def enqueue(
        self,
        key: ObjectKey,
        priority: workqueue.Priority,
        why: trigger.Trigger | None = None,
    ) -> None:
        """Add a key from outside the primary watch (a dependent's owner, a handover)."""
        if self._gate is None or self._gate.owns(self.gvk, key):
            self.queue.add(key, priority=priority, why=why)

    def start(self) -> None:
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def in_flight(self) -> int:
        return self.queue.in_flight()  # keys handed out and not yet done

    def busy_since(self) -> list[float]:
        """``time.monotonic()`` at which each key a worker holds now was taken."""
        with self._busy_lock:
            return list(self._busy.values())

    def _slot_wait(self, waiting: bool) -> None:
        """The calling worker waits for a run slot (left out of liveness), or got one (its
        reconcile's clock starts again)."""
        with self._busy_lock:
            worker = threading.get_ident()
            if worker in self._busy:
                self._busy[worker] = math.inf if waiting else time.monotonic()

    def stop(self, *, timeout: float) -> bool:
        """Stop taking work; wait up to ``timeout`` for running reconciles. True if all ended."""
        self.queue.shutdown()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return  # shut down
            worker = threading.get_ident()
            with self._busy_lock:
                self._busy[worker] = time.monotonic()
            try:
                if self._gate is None:
                    self._process(key)
                elif self._gate.begin(self.gvk, key):
                    try:
                        self._process(key)
                    finally:
                        self._gate.end(self.gvk, key)
                elif self._gate.owns(self.gvk, key):
                    # Ours, but the previous owner has not released it yet (or our own
                    # Lease is due for renewal): look again after one shard round.
                    why = self.queue.trigger_of(key)  # still why it runs, once it may
                    self.queue.add_after(key, self._gate.retry_period, why=why)
                else:
                    self.queue.forget(key)  # handed over: the new owner runs it
            finally:
                with self._busy_lock:
                    del self._busy[worker]
                # done() after the result branch: a key re-added meanwhile becomes ready now.
                self.queue.done(key)

    def _process(self, key: ObjectKey) -> None:
        started = time.monotonic()
        request = reconciler.Request.of(self.gvk, key)
        why = self.queue.trigger_of(key)
        try:
            result = self.reconciler.reconcile(request, why=why)
        except Exception as exc:
            # Failure: keep the backoff growing; the key comes back after base * 2**failures.
            self.queue.add_rate_limited(key)
            outcome, action = Outcome.FAILED, Action.ERROR
            failed = isinstance(exc, reconciler.ReconcileFailed)
            level = logging.WARNING if failed else logging.ERROR
            log.log(
                level,
                "reconcile failed",
                exc_info=_crashed(exc),
                extra={
                    "kind": self.gvk.kind,
                    "object": key,
                    "error": str(exc),
                    "retries": self.queue.failures(key),
                    "trigger": str(why.kind),
                },
            )
        else:
            # Success: reset the backoff; with requeue_after, come back later at resync priority.
            self.queue.forget(key)
            if result.requeue_after is not None and result.requeue_after > 0:
                self.queue.add_after(key, result.requeue_after, why=_later(result))
                outcome = Outcome.REQUEUED if result.requested else Outcome.SUCCEEDED
                action = Action.REQUEUE_AFTER
            else:
                outcome, action = Outcome.SUCCEEDED, Action.SUCCESS
        elapsed = time.monotonic() - started
        if outcome is not Outcome.FAILED:
            log.info(
                "reconciled",
                extra={
                    "kind": self.gvk.kind,
                    "object": key,
                    "result": str(outcome),
                    "seconds": round(elapsed, 3),
                    "trigger": str(why.kind),
                },
            )
        if self._observer is not None:
            self._observer.reconciled(
                controller=self.name, gvk=self.gvk, outcome=outcome, action=action, seconds=elapsed
            )


def _crashed(exc: Exception) -> bool:
    """Whether a reconcile's exception is a crash (a bug, a full disk), whose traceback
    helps, rather than an error the runtime understands (failed tasks, a refused
    annotation, an API answer), which its message says enough about."""
    known = (errors.PlaybookOperatorError, kube_errors.KubeError)
    cause = exc.__cause__ if isinstance(exc, errors.ReconcileError) else None
    return not isinstance(exc, known) or (cause is not None and not isinstance(cause, known))


def _later(result: reconciler.Result) -> trigger.Trigger:
    """Why the next run comes: the role's requeue_after, else the reconcile period."""
    after = f"after {result.requeue_after:g}s"
    if result.requested:
        return trigger.Trigger(trigger.Kind.REQUEUE_AFTER, after)
    return trigger.Trigger(trigger.Kind.RESYNC, f"reconcile period, {after}")
