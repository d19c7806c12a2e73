"""Prometheus metrics of the runtime, plus the endpoint where roles post their own.

Sits beside the flow watch → queue → reconcile → ansible → status and counts
what passes: primary events (``resource_created_at_seconds``), the queue
(client-go's ``workqueue_*``), finished reconciles (controller-runtime's
``controller_runtime_*`` and our ``playbook_operator_*``) and Ansible runs
(ansible-operator's ``ansible_operator_*``). Names, types and labels of the
upstream families are those ansible-operator exposes, so its dashboards and
alerts keep working; docs/reference.md lists every family.

Roles register and update custom metrics through the ``osdk_metric`` module,
which POSTs operator-sdk's payload (``{name, description,
counter|gauge|histogram|summary: {...}}``) to ``--custom-metrics-bind-address``
(127.0.0.1 only: roles run on this host). They are exposed under exactly the
name the role gave, as Go's Prometheus client does: a counter ``x`` is ``x``,
with no ``_total`` added and no ``_created`` series. So is everything else:
:func:`exposition` writes the text format the way Go's client does.
"""

from __future__ import annotations

import contextlib
import http
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import Summary as SummaryMetric
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

import runner
from runner.base import listener
from runner.kube.types import GVK
from runner.queue import workqueue
from runner.watch import budget
from runner.watch.predicate import Event, EventType

log = logging.getLogger("runner.metrics")

_DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
# Go's prometheus.DefBuckets: ansible-operator's histograms and roles' histograms.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# controller-runtime's reconcile-time buckets.
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5),
    *(5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
# client-go's workqueue latency buckets: 10 ns to 10 s, by tens.
WORKQUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 2))
# controller-runtime creates every result label of a controller at 0 when it starts.
RUNTIME_RESULTS = ("error", "requeue", "requeue_after", "success")

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def gvk_label(gvk: GVK) -> str:
    """Go's ``schema.GroupVersionKind.String()``, ansible-operator's ``GVK`` label value."""
    return f"{gvk.group}/{gvk.version}, Kind={gvk.kind}"


class Metrics:
    """The runtime's metrics on a private registry (no process-global state)."""

    def __init__(self) -> None:
        # auto_describe: a role metric whose name a built-in family uses is refused.
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.reconciles = Counter(
            "playbook_operator_reconcile_total",
            "Reconciles by kind and result (succeeded, requeue_after, failed).",
            ["group", "version", "kind", "result"],
            registry=registry,
        )
        self.reconcile_seconds = Histogram(
            "playbook_operator_reconcile_duration_seconds",
            "Wall time of one reconcile, Ansible run and status writes included.",
            ["group", "version", "kind"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        # trigger: runner.queue.trigger.Kind's values, a fixed set (bounded label).
        self.runs = Counter(
            "playbook_operator_runs_total",
            "Ansible runs by kind, why they ran (trigger) and result (succeeded, failed).",
            ["group", "version", "kind", "trigger", "result"],
            registry=registry,
        )
        self.ansible_seconds = Histogram(
            "playbook_operator_ansible_run_duration_seconds",
            "Wall time of one Ansible run.",
            ["group", "version", "kind", "result"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        # Labels are the rule a role lacked: bounded by the kinds and verbs roles use.
        self.api_denied = Counter(
            "playbook_operator_api_requests_denied_total",
            "Requests of Ansible runs the API server denied (403), by the RBAC rule lacked.",
            ["group", "resource", "verb"],
            registry=registry,
        )
        build = Gauge(
            "playbook_operator_build_info",
            "Build information; the value is always 1.",
            ["version"],
            registry=registry,
        )
        build.labels(version=runner.__version__).set(1)
        # controller-runtime: one series per controller.
        self.runtime_reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Reconciles per controller and result.",
            ["controller", "result"],
            registry=registry,
        )
        self.runtime_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles per controller that ended in an error.",
            ["controller"],
            registry=registry,
        )
        self.runtime_seconds = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconcile per controller.",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.runtime_workers = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Workers per controller.",
            ["controller"],
            registry=registry,
        )
        # client-go's workqueue: label ``name`` is the controller's name.
        self.queue_wait = Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the workqueue, once ready, before a worker takes it.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self.queue_work = Histogram(
            "workqueue_work_duration_seconds",
            "Seconds a worker holds a key taken from the workqueue.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self._queues: dict[str, workqueue.WorkQueue] = {}
        registry.register(_QueueCollector(self._queues))
        # ansible-operator's own.
        self.ansible_results = Gauge(
            "ansible_operator_reconcile_result",
            "Ansible runs per GVK and result (succeeded, failed); only ever increases.",
            ["GVK", "result"],
            registry=registry,
        )
        self.ansible_runs = Histogram(
            "ansible_operator_reconciles",
            "Seconds one Ansible run of a GVK takes.",
            ["GVK"],
            buckets=GO_DEFAULT_BUCKETS,
            registry=registry,
        )
        self.created_at = Gauge(
            "resource_created_at_seconds",
            "Creation time of each watched custom resource, in Unix seconds.",
            ["name", "namespace", "group", "version", "kind"],
            registry=registry,
        )
        # controller-runtime's webhook families; the webhook label is the path.
        self.webhook_requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["code", "webhook"],
            registry=registry,
        )
        self.webhook_in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=registry,
        )
        self.webhook_latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            buckets=GO_DEFAULT_BUCKETS,
            registry=registry,
        )
        self._custom: dict[str, Any] = {}
        self._custom_lock = threading.Lock()

    # -- what the controllers and reconcilers report ---------------------------

    def add_controller(self, *, name: str, workers: int, work_queue: workqueue.WorkQueue) -> None:
        """Series of one controller, created when it is, as controller-runtime does."""
        self.runtime_workers.labels(controller=name).set(workers)
        self.runtime_errors.labels(controller=name)
        for result in RUNTIME_RESULTS:
            self.runtime_reconciles.labels(controller=name, result=result)
        self._queues[name] = work_queue

    def queue_observer(self, name: str) -> workqueue.Observer:
        """Waits and work times of the queue of controller ``name``."""
        return _QueueTimes(
            queued=self.queue_wait.labels(name=name), worked=self.queue_work.labels(name=name)
        )

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

    def webhook_started(self, webhook: str) -> None:
        """An admission request to ``webhook`` (its path) is being served."""
        self.webhook_in_flight.labels(webhook=webhook).inc()

    def webhook_finished(self, webhook: str, *, code: int, seconds: float) -> None:
        self.webhook_in_flight.labels(webhook=webhook).dec()
        self.webhook_requests.labels(code=str(code), webhook=webhook).inc()
        self.webhook_latency.labels(webhook=webhook).observe(seconds)

    def observe_run(
        self, gvk: GVK, *, failed: bool, seconds: float, trigger: str = "other"
    ) -> None:
        self.runs.labels(
            group=gvk.group,
            version=gvk.version,
            kind=gvk.kind,
            trigger=trigger,
            result="failed" if failed else "succeeded",
        ).inc()
        self.ansible_seconds.labels(
            group=gvk.group, version=gvk.version, kind=gvk.kind, result="failed" if failed else "ok"
        ).observe(seconds)
        self.ansible_results.labels(
            GVK=gvk_label(gvk), result="failed" if failed else "succeeded"
        ).inc()
        self.ansible_runs.labels(GVK=gvk_label(gvk)).observe(seconds)

    def add_api_counter(self, read: Callable[[], int]) -> None:
        """Requests this process sent to the API server (its own and its runs', via the proxy)."""

        class _Collector:
            def collect(self) -> Any:
                family = CounterMetricFamily(
                    "playbook_operator_api_requests",
                    "Requests sent to the API server, including those proxied for Ansible runs.",
                )
                family.add_metric([], read())
                yield family

        self.registry.register(_Collector())

    def add_queue_gauges(
        self, *, depth: Callable[[], dict[GVK, int]], in_flight: Callable[[], dict[GVK, int]]
    ) -> None:
        """Gauges read at scrape time from the controllers."""

        class _Collector:
            def collect(self) -> Any:
                for name, help_text, source in (
                    ("playbook_operator_queue_depth", "Keys waiting in the work queue.", depth),
                    ("playbook_operator_runs_in_flight", "Reconciles running now.", in_flight),
                ):
                    family = GaugeMetricFamily(name, help_text, labels=["group", "version", "kind"])
                    for gvk, value in source().items():
                        family.add_metric([gvk.group, gvk.version, gvk.kind], value)
                    yield family

        self.registry.register(_Collector())

    def add_launcher_metrics(
        self,
        *,
        memory: Callable[[], int],
        running: Callable[[], int],
        outcomes: Callable[[], dict[str, int]],
        recycles: Callable[[], dict[str, int]] = dict,
    ) -> None:
        """Warm launchers (runner.warm), read at scrape time; ``recycles``: launchers
        replaced, by reason (runs, rss)."""

        class _Collector:
            def collect(self) -> Any:
                rss = GaugeMetricFamily(
                    "playbook_operator_warm_launcher_memory_bytes",
                    "Resident memory of the warm launcher processes.",
                )
                rss.add_metric([], memory())
                yield rss
                live = GaugeMetricFamily(
                    "playbook_operator_warm_launchers", "Warm launcher processes running."
                )
                live.add_metric([], running())
                yield live
                starts = CounterMetricFamily(
                    "playbook_operator_ansible_starts",
                    "ansible-playbook starts: warm (forked), cold (exec'd), "
                    "lost (launcher died mid-run; run again cold).",
                    labels=["mode"],
                )
                for mode, count in sorted(outcomes().items()):
                    starts.add_metric([mode], count)
                yield starts
                replaced = CounterMetricFamily(
                    "playbook_operator_warm_launcher_recycles",
                    "Warm launchers replaced between runs: after --warm-launcher-max-runs "
                    "runs (runs) or above --warm-launcher-max-rss (rss).",
                    labels=["reason"],
                )
                for reason, count in sorted(recycles().items()):
                    replaced.add_metric([reason], count)
                yield replaced

        self.registry.register(_Collector())

    def add_informer_gauges(self, held: Callable[[], list[tuple[GVK, budget.Held]]]) -> None:
        """What the informers hold per kind: objects and approximate bytes."""

        class _Collector:
            def collect(self) -> Any:
                totals: dict[GVK, list[int]] = {}
                for gvk, holding in held():
                    total = totals.setdefault(gvk, [0, 0])
                    total[0] += holding.objects
                    total[1] += holding.bytes
                for index, (name, help_text) in enumerate(
                    (
                        ("playbook_operator_informer_objects", "Objects the informers hold."),
                        (
                            "playbook_operator_informer_bytes",
                            "Approximate size of what the informers hold (compact JSON bytes).",
                        ),
                    )
                ):
                    family = GaugeMetricFamily(name, help_text, labels=["group", "version", "kind"])
                    for gvk, total in totals.items():
                        family.add_metric([gvk.group, gvk.version, gvk.kind], total[index])
                    yield family

        self.registry.register(_Collector())

    def add_shard_metrics(
        self,
        *,
        owned: Callable[[], int],
        members: Callable[[], int],
        handovers: Callable[[], dict[str, int]],
        view_changes: Callable[[], int],
    ) -> None:
        """Sharded mode (runner.operations.sharding), read at scrape time."""

        class _Collector:
            def collect(self) -> Any:
                mine = GaugeMetricFamily(
                    "playbook_operator_shard_owned_resources",
                    "Primary objects this replica may reconcile now.",
                )
                mine.add_metric([], owned())
                yield mine
                live = GaugeMetricFamily(
                    "playbook_operator_shard_members", "Live replicas in this replica's view."
                )
                live.add_metric([], members())
                yield live
                moved = CounterMetricFamily(
                    "playbook_operator_shard_handovers",
                    "Objects handed over between replicas: acquired from or released to "
                    "another replica.",
                    labels=["direction"],
                )
                counts = handovers()
                for direction in ("acquired", "released"):
                    moved.add_metric([direction], counts.get(direction, 0))
                yield moved
                changes = CounterMetricFamily(
                    "playbook_operator_shard_view_changes",
                    "Membership views this replica published (its ownership changed).",
                )
                changes.add_metric([], view_changes())
                yield changes

        self.registry.register(_Collector())

    # -- custom metrics from roles ------------------------------------------

    def apply_custom(self, payload: dict[str, Any]) -> None:
        """Create or update one role metric; raises ValueError on a bad payload."""
        name = payload.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"'name' must be a Prometheus metric name, got {name!r}")
        description = str(payload.get("description") or name)
        kinds = [
            k for k in ("counter", "gauge", "histogram", "summary") if payload.get(k) is not None
        ]
        if len(kinds) != 1:
            raise ValueError("exactly one of counter, gauge, histogram, summary is required")
        kind = kinds[0]
        spec = payload[kind] or {}
        with self._custom_lock:
            metric = self._custom.get(name)
            if metric is None:
                metric = _new_role_metric(kind, name, description, self.registry)
                self._custom[name] = metric
        if kind == "counter":
            if not isinstance(metric, _RoleCounter):
                raise ValueError(f"metric {name!r} exists with another type")
            if spec.get("increment"):
                metric.inc(1.0)
            if spec.get("add") is not None:
                metric.inc(float(spec["add"]))
        elif kind == "gauge":
            if not isinstance(metric, Gauge):
                raise ValueError(f"metric {name!r} exists with another type")
            if spec.get("set") is not None:
                metric.set(float(spec["set"]))
            if spec.get("increment"):
                metric.inc()
            if spec.get("decrement"):
                metric.dec()
            if spec.get("add") is not None:
                metric.inc(float(spec["add"]))
            if spec.get("subtract") is not None:
                metric.dec(float(spec["subtract"]))
            if spec.get("set_to_current_time"):
                metric.set_to_current_time()
        else:
            # As in ansible-operator, histograms and summaries take each other's observations.
            if not isinstance(metric, Histogram | SummaryMetric):
                raise ValueError(f"metric {name!r} exists with another type")
            if spec.get("observe") is not None:
                metric.observe(float(spec["observe"]))


def _new_role_metric(kind: str, name: str, description: str, registry: CollectorRegistry) -> Any:
    """Registers the metric; a name already in use raises ValueError."""
    if kind == "counter":
        counter = _RoleCounter(name, description)
        registry.register(counter)
        return counter
    if kind == "gauge":
        return Gauge(name, description, registry=registry)
    if kind == "histogram":
        return Histogram(name, description, buckets=GO_DEFAULT_BUCKETS, registry=registry)
    return SummaryMetric(name, description, registry=registry)


class _RoleCounter:
    """A counter exposed under exactly its name (prometheus_client would add ``_total``)."""

    def __init__(self, name: str, description: str) -> None:
        self._name = name
        self._description = description
        self._value = 0.0
        self._lock = threading.Lock()

    def inc(self, amount: float) -> None:
        if amount < 0:
            raise ValueError(f"counter {self._name!r} cannot decrease (add {amount:g})")
        with self._lock:
            self._value += amount

    def describe(self) -> list[Metric]:
        return [Metric(self._name, self._description, "counter")]

    def collect(self) -> list[Metric]:
        family = Metric(self._name, self._description, "counter")
        with self._lock:
            family.add_sample(self._name, {}, self._value)
        return [family]


class _QueueTimes:
    def __init__(self, *, queued: Any, worked: Any) -> None:
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

    def collect(self) -> Iterator[Metric]:
        def gauge(name: str, text: str, label: str = "name") -> GaugeMetricFamily:
            return GaugeMetricFamily(name, text, labels=[label])

        depth = gauge("workqueue_depth", "Keys ready in the workqueue, waiting for a worker.")
        adds = CounterMetricFamily(
            "workqueue_adds_total", "Keys that became ready in the workqueue.", labels=["name"]
        )
        retries = CounterMetricFamily(
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


# -- exposition ------------------------------------------------------------------


def go_float(value: float) -> str:
    """A number as Go's client writes it (``strconv.FormatFloat(v, 'g', -1, 64)``):
    ``1`` not ``1.0``, ``1e+06`` not ``1000000.0``. Bucket bounds (``le``) are
    label values, so ``le="1.0"`` would not match a query for ``le="1"``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    point = len(text) + int(exponent)  # digits before the decimal point
    prefix = "-" if value < 0 else ""
    if not -4 <= point - 1 < 6:  # Go's %e range for the shortest representation
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{prefix}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def _escape(text: str, *, quote: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def _labels(labels: dict[str, str]) -> str:
    """Sorted by name, with ``le``/``quantile`` last and in Go's number format."""
    if not labels:
        return ""
    pairs = sorted((k, v) for k, v in labels.items() if k not in ("le", "quantile"))
    for bound in ("le", "quantile"):
        if bound in labels:
            pairs.append((bound, go_float(float(labels[bound]))))
    return "{" + ",".join(f'{k}="{_escape(v, quote=True)}"' for k, v in pairs) + "}"


def _families(registry: CollectorRegistry) -> Iterable[tuple[str, str, Metric]]:
    """(exposed name, type, family), dropping prometheus_client's ``_created`` series."""
    for family in registry.collect():
        samples = [s for s in family.samples if s.name != family.name + "_created"]
        if not samples:
            continue  # Go's client writes nothing for a vector without series
        family.samples = samples
        kind = family.type
        name = family.name
        if kind == "counter":
            name = samples[0].name  # ``x_total`` for built-in counters, as named for roles
        elif kind == "info":
            name, kind = name + "_info", "gauge"
        elif kind not in ("gauge", "histogram", "summary"):
            kind = "untyped"
        yield name, kind, family


def exposition(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format (0.0.4) as Go's client writes it, families by name."""
    lines: list[str] = []
    for name, kind, family in sorted(_families(registry), key=lambda item: item[0]):
        lines.append(f"# HELP {name} {_escape(family.documentation, quote=False)}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(
            f"{s.name}{_labels(dict(s.labels))} {go_float(s.value)}" for s in family.samples
        )
    return ("\n".join(lines) + "\n").encode() if lines else b""


#: Given the request's Authorization header, the HTTP status to answer with (200: serve).
Authorize = Callable[[str | None], int]

#: Roles' payloads are a name, a description and one value or observation.
CUSTOM_LIMITS = listener.Limits(max_body=64 * 1024)


def exposition_handler(
    metrics: Metrics,
    *,
    authorize: Authorize | None = None,
    rbac: Callable[[], dict[str, Any]] | None = None,
) -> listener.App:
    """GET /metrics, and with ``rbac`` GET /debug/rbac (the RBAC record as JSON); with
    ``authorize``, the token is checked before anything else is read, for both."""

    def handle(request: listener.Request) -> listener.Response:
        if request.method != "GET":
            return listener.text(405, "method not allowed")
        if rbac is not None and request.path == "/debug/rbac":
            return _json(200, rbac())
        if not request.path.startswith("/metrics"):
            return listener.text(404, "not found")
        return listener.Response(
            200, exposition(metrics.registry), content_type=CONTENT_TYPE_LATEST
        )

    check: listener.Authorize | None = None
    if authorize is not None:
        decide = authorize

        def check(request: listener.Request) -> listener.Response | None:
            code = decide(request.headers.get("authorization"))
            if code == 200:
                return None
            return listener.text(code, http.HTTPStatus(code).phrase.lower())

    return listener.App(handle=handle, authorize=check)


def custom_handler(metrics: Metrics) -> listener.App:
    """POST /metrics with operator-sdk's payload: 200 ``{"ok": true}`` or 400 and the reason."""

    def handle(request: listener.Request) -> listener.Response:
        if request.method != "POST":
            return _json(405, {"error": "POST a metric"})
        try:
            payload = json.loads(request.body or b"{}")
            if not isinstance(payload, dict):
                raise ValueError("expected a JSON object")
            metrics.apply_custom(payload)
        except (ValueError, TypeError) as exc:
            return _json(400, {"error": str(exc)})
        return _json(200, {"ok": True})

    return listener.App(handle=handle, limits=CUSTOM_LIMITS)


def _json(code: int, body: dict[str, Any]) -> listener.Response:
    return listener.Response(code, json.dumps(body).encode(), content_type="application/json")
