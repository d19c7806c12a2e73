"""client-go's ``workqueue_*`` families: what the work queues report, per controller.

Names, types and the ``name`` label (the controller's name) are client-go's, so
dashboards written for ansible-operator find them. Waits and work times are observed
as keys move (:meth:`QueueFamilies.observer`); depths, counts and ages are read from
each queue at scrape time (:meth:`WorkQueue.stats`), with controller-runtime's
``controller_runtime_active_workers``, which is the queue's keys in flight.
"""

from __future__ import annotations

from collections.abc import Iterator

from runner.prometheus import registry as registry_mod
from runner.queue import meter, workqueue

# client-go's workqueue latency buckets: 10 ns to 10 s, by tens.
WORKQUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 2))


class QueueFamilies:
    """The queues of every controller, on one registry."""

    def __init__(self, registry: registry_mod.Registry) -> None:
        self.queue_wait = registry.histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the workqueue, once ready, before a worker takes it.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
        )
        self.queue_work = registry.histogram(
            "workqueue_work_duration_seconds",
            "Seconds a worker holds a key taken from the workqueue.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
        )
        self._queues: dict[str, workqueue.WorkQueue] = {}
        registry.register(_QueueCollector(self._queues))

    def add(self, name: str, work_queue: workqueue.WorkQueue) -> None:
        """Read ``work_queue`` at each scrape as the queue of controller ``name``."""
        self._queues[name] = work_queue

    def observer(self, name: str) -> meter.QueueObserver:
        """Waits and work times of the queue of controller ``name``."""
        return _QueueTimes(
            queued=self.queue_wait.labels(name=name), worked=self.queue_work.labels(name=name)
        )


class _QueueTimes:
    def __init__(self, *, queued: registry_mod.Histogram, worked: registry_mod.Histogram) -> None:
        self._queued = queued
        self._worked = worked

    def queued(self, seconds: float) -> None:
        self._queued.observe(seconds)

    def worked(self, seconds: float) -> None:
        self._worked.observe(seconds)


class _QueueCollector:
    """client-go's workqueue gauges and counters, and controller-runtime's active
    workers, read from the queues at scrape time."""

    def __init__(self, queues: dict[str, workqueue.WorkQueue]) -> None:
        self._queues = queues

    def collect(self) -> Iterator[registry_mod.Family]:
        def gauge(name: str, text: str, label: str = "name") -> registry_mod.GaugeFamily:
            return registry_mod.GaugeFamily(name, text, labels=[label])

        depth = gauge("workqueue_depth", "Keys ready in the workqueue, waiting for a worker.")
        adds = registry_mod.CounterFamily(
            "workqueue_adds_total", "Keys that became ready in the workqueue.", labels=["name"]
        )
        retries = registry_mod.CounterFamily(
            "workqueue_retries_total",
            "Delayed adds (retries and requeues) to the workqueue.",
            labels=["name"],
        )
        unfinished = gauge(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration; "
            "a steady rise means stuck workers.",
        )
        longest = gauge(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest-running worker of the workqueue has held its key.",
        )
        active = gauge(
            "controller_runtime_active_workers", "Workers busy now per controller.", "controller"
        )
        for name, work_queue in sorted(self._queues.items()):
            stats = work_queue.stats()
            depth.add_metric([name], stats.ready)
            adds.add_metric([name], stats.adds)
            retries.add_metric([name], stats.retries)
            unfinished.add_metric([name], stats.unfinished_seconds)
            longest.add_metric([name], stats.longest_running_seconds)
            active.add_metric([name], work_queue.in_flight())
        yield from (depth, adds, retries, unfinished, longest, active)
