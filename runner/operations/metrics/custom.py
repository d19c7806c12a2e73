"""Roles' own metrics: what the ``osdk_metric`` module registers and updates.

Roles POST operator-sdk's payload (``{name, description,
counter|gauge|histogram|summary: {...}}``) to ``--custom-metrics-bind-address``
(:func:`runner.operations.metrics.endpoint.custom_handler`). A metric is registered
on first use in the runtime's one registry, so a role cannot take a built-in
family's name, and is exposed under exactly the name the role gave, as Go's
Prometheus client does: a counter ``x`` is ``x``, with no ``_total`` added and no
``_created`` series.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from runner.prometheus import registry as registry_mod

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


class RoleMetrics:
    """The metrics roles created, by name, in the runtime's registry."""

    def __init__(self, registry: registry_mod.Registry) -> None:
        self._registry = registry
        self._custom: dict[str, Any] = {}
        self._custom_lock = threading.Lock()

    def apply(self, payload: dict[str, Any]) -> None:
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
                metric = self._new(kind, name, description)
                self._custom[name] = metric
        if kind == "counter":
            if not isinstance(metric, _RoleCounter):
                raise ValueError(f"metric {name!r} exists with another type")
            if spec.get("increment"):
                metric.inc(1.0)
            if spec.get("add") is not None:
                metric.inc(float(spec["add"]))
        elif kind == "gauge":
            if not isinstance(metric, registry_mod.Gauge):
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
            if not isinstance(metric, registry_mod.Histogram | registry_mod.Summary):
                raise ValueError(f"metric {name!r} exists with another type")
            if spec.get("observe") is not None:
                metric.observe(float(spec["observe"]))

    def _new(self, kind: str, name: str, description: str) -> Any:
        """Registers the metric; a name already in use raises ValueError."""
        if kind == "counter":
            counter = _RoleCounter(name, description)
            self._registry.register(counter)
            return counter
        if kind == "gauge":
            return self._registry.gauge(name, description)
        if kind == "histogram":
            return self._registry.histogram(name, description)  # Go's default buckets
        return self._registry.summary(name, description)


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

    def describe(self) -> list[registry_mod.Family]:
        return [registry_mod.Family(self._name, self._description, "counter")]

    def collect(self) -> list[registry_mod.Family]:
        family = registry_mod.Family(self._name, self._description, "counter")
        with self._lock:
            family.add_sample(self._name, {}, self._value)
        return [family]
