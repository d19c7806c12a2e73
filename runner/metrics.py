"""Prometheus metrics of the runtime, plus the endpoint where roles post their own.

``/metrics`` (``--metrics-bind-address``) exposes reconciles by kind and result,
reconcile and Ansible-run durations, queue depth, runs in flight and build
info. Roles register and update custom metrics through the ``osdk_metric``
module of the runner's collection, which POSTs operator-sdk's payload
(``{name, description, counter|gauge|histogram|summary: {...}}``) to
``--custom-metrics-bind-address`` (127.0.0.1 only: roles run on this host).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

import runner
from runner.kube.types import GVK

log = logging.getLogger("runner.metrics")

_DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)


class Metrics:
    """The runtime's metrics on a private registry (no process-global state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = Counter(
            "playbook_operator_reconcile_total",
            "Reconciles by kind and result (succeeded, requeue_after, failed).",
            ["group", "version", "kind", "result"],
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "playbook_operator_reconcile_duration_seconds",
            "Wall time of one reconcile, Ansible run and status writes included.",
            ["group", "version", "kind"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        self.ansible_seconds = Histogram(
            "playbook_operator_ansible_run_duration_seconds",
            "Wall time of one Ansible run.",
            ["group", "version", "kind", "result"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        build = Gauge(
            "playbook_operator_build_info",
            "Build information; the value is always 1.",
            ["version"],
            registry=self.registry,
        )
        build.labels(version=runner.__version__).set(1)
        self._custom: dict[str, Any] = {}
        self._custom_lock = threading.Lock()

    def observe_reconcile(self, gvk: GVK, result: str, seconds: float) -> None:
        labels = {"group": gvk.group, "version": gvk.version, "kind": gvk.kind}
        self.reconciles.labels(result=result, **labels).inc()
        self.reconcile_seconds.labels(**labels).observe(seconds)

    def observe_run(self, gvk: GVK, *, failed: bool, seconds: float) -> None:
        self.ansible_seconds.labels(
            group=gvk.group, version=gvk.version, kind=gvk.kind, result="failed" if failed else "ok"
        ).observe(seconds)

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

    # -- custom metrics from roles ------------------------------------------

    def apply_custom(self, payload: dict[str, Any]) -> None:
        """Create or update one role metric; raises ValueError on a bad payload."""
        name = payload.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("'name' is required")
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
            factory = {
                "counter": Counter,
                "gauge": Gauge,
                "histogram": Histogram,
                "summary": Summary,
            }[kind]
            if metric is None:
                metric = factory(name, description, registry=self.registry)
                self._custom[name] = metric
            elif not isinstance(metric, factory):
                raise ValueError(f"metric {name!r} exists with another type")
        if kind == "counter":
            if spec.get("increment"):
                metric.inc()
            if spec.get("add") is not None:
                metric.inc(float(spec["add"]))
        elif kind == "gauge":
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
        elif spec.get("observe") is not None:
            metric.observe(float(spec["observe"]))


#: Given the request's Authorization header, the HTTP status to answer with (200: serve).
Authorize = Callable[[str | None], int]


def exposition_handler(
    metrics: Metrics, *, authorize: Authorize | None = None
) -> type[BaseHTTPRequestHandler]:
    class Expose(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if not self.path.startswith("/metrics"):
                self.send_error(404)
                return
            if authorize is not None:
                code = authorize(self.headers.get("Authorization"))
                if code != 200:
                    self.send_error(code)
                    return
            body = generate_latest(metrics.registry)
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Expose


def custom_handler(metrics: Metrics) -> type[BaseHTTPRequestHandler]:
    class Custom(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                payload = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(payload, dict):
                    raise ValueError("expected a JSON object")
                metrics.apply_custom(payload)
            except (ValueError, TypeError) as exc:
                self._answer(400, {"error": str(exc)})
                return
            self._answer(200, {"ok": True})

        def _answer(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Custom
