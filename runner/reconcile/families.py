"""The controllers' families: reconciles as controller-runtime and we count them.

A controller reports here through its observer
(:class:`~runner.reconcile.controller.ReconcileObserver`): the primary events that passed
its predicates (``resource_created_at_seconds``, one series per watched custom resource,
removed with it) and each finished reconcile
(controller-runtime's ``controller_runtime_reconcile_*`` by controller and result, and
our ``playbook_operator_reconcile_*`` by kind). :class:`KindGauges` reads the
controllers' queues and workers per kind at scrape time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime

from runner.kube.types import GVK
from runner.prometheus import registry as registry_mod
from runner.watch.predicate import Event, EventType

# controller-runtime's reconcile-time buckets.
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5),
    *(5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
# controller-runtime creates every result label of a controller at 0 when it starts.
RUNTIME_RESULTS = ("error", "requeue", "requeue_after", "success")


class ControllerFamilies:
    """What every controller reports, on one registry."""

    def __init__(self, registry: registry_mod.Registry) -> None:
        self.reconciles = registry.counter(
            "playbook_operator_reconcile_total",
            "Reconciles by kind and result (succeeded, requeue_after, failed).",
            ["group", "version", "kind", "result"],
        )
        self.reconcile_seconds = registry.histogram(
            "playbook_operator_reconcile_duration_seconds",
            "Wall time of one reconcile, Ansible run and status writes included.",
            ["group", "version", "kind"],
            buckets=registry_mod.DURATION_BUCKETS,
        )
        # controller-runtime: one series per controller.
        self.runtime_reconciles = registry.counter(
            "controller_runtime_reconcile_total",
            "Reconciles per controller and result.",
            ["controller", "result"],
        )
        self.runtime_errors = registry.counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles per controller that ended in an error.",
            ["controller"],
        )
        self.runtime_seconds = registry.histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconcile per controller.",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
        )
        self.runtime_workers = registry.gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Workers per controller.",
            ["controller"],
        )
        self.created_at = registry.gauge(
            "resource_created_at_seconds",
            "Creation time of each watched custom resource, in Unix seconds.",
            ["name", "namespace", "group", "version", "kind"],
        )

    def add_controller(self, *, name: str, workers: int) -> None:
        """Series of one controller, created when it is, as controller-runtime does."""
        self.runtime_workers.labels(controller=name).set(workers)
        self.runtime_errors.labels(controller=name)
        for result in RUNTIME_RESULTS:
            self.runtime_reconciles.labels(controller=name, result=result)

    def matched(self, *, gvk: GVK, event: Event) -> None:
        """A primary event passed the predicates: track the object's creation time."""
        meta = event.obj.get("metadata") or {}
        labels = {
            "name": str(meta.get("name", "")),
            "namespace": str(meta.get("namespace") or ""),
            "group": gvk.group,
            "version": gvk.version,
            "kind": gvk.kind,
        }
        if event.type is EventType.DELETED:
            with contextlib.suppress(KeyError):
                self.created_at.remove(*labels.values())
            return
        created = meta.get("creationTimestamp")
        if isinstance(created, str):
            stamp = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
            self.created_at.labels(**labels).set(int(stamp))

    def reconciled(
        self, *, controller: str, gvk: GVK, outcome: str, action: str, seconds: float
    ) -> None:
        labels = {"group": gvk.group, "version": gvk.version, "kind": gvk.kind}
        self.reconciles.labels(result=outcome, **labels).inc()
        self.reconcile_seconds.labels(**labels).observe(seconds)
        self.runtime_reconciles.labels(controller=controller, result=action).inc()
        if action == "error":
            self.runtime_errors.labels(controller=controller).inc()
        self.runtime_seconds.labels(controller=controller).observe(seconds)


class KindGauges:
    """Keys waiting and reconciles running per kind, read from the controllers at
    scrape time."""

    def __init__(
        self, *, depth: Callable[[], dict[GVK, int]], in_flight: Callable[[], dict[GVK, int]]
    ) -> None:
        self._depth = depth
        self._in_flight = in_flight

    def collect(self) -> Iterator[registry_mod.Family]:
        for name, help_text, source in (
            ("playbook_operator_queue_depth", "Keys waiting in the work queue.", self._depth),
            ("playbook_operator_runs_in_flight", "Reconciles running now.", self._in_flight),
        ):
            family = registry_mod.GaugeFamily(name, help_text, labels=["group", "version", "kind"])
            for gvk, value in source().items():
                family.add_metric([gvk.group, gvk.version, gvk.kind], value)
            yield family
