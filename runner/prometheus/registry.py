"""The one metrics registry: the runtime's only importer of ``prometheus_client``.

Families are defined by the package that owns what they measure (the queue, the
controllers, Ansible runs, warm launchers, informers, sharding, the API, webhooks,
roles) and registered here, on a private registry (no process-global state).
Two kinds: instruments the owner updates as things happen (:meth:`Registry.counter`,
:meth:`~Registry.gauge`, :meth:`~Registry.histogram`, :meth:`~Registry.summary`), and
collectors read at scrape time (:meth:`Registry.register` with :class:`CounterFamily`
and :class:`GaugeFamily`). :mod:`runner.prometheus.exposition` writes what it collects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import Summary as _Summary
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

__all__ = [
    "CONTENT_TYPE",
    "DURATION_BUCKETS",
    "GO_DEFAULT_BUCKETS",
    "Collector",
    "Counter",
    "CounterFamily",
    "Family",
    "Gauge",
    "GaugeFamily",
    "Histogram",
    "Registry",
    "Summary",
]

#: The text format's content type (0.0.4), as ``/metrics`` answers it.
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Go's ``prometheus.DefBuckets``: ansible-operator's histograms and roles' histograms.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
#: The runtime's own ``playbook_operator_*_duration_seconds``: 0.1 s to 5 min.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)

#: A family as collected: a name, a type, a HELP text and its samples.
Family = Metric
#: Scrape-time families a collector builds: counters (``_total`` added) and gauges.
CounterFamily = CounterMetricFamily
GaugeFamily = GaugeMetricFamily
Summary = _Summary


class Collector(Protocol):
    """Families built when the registry is read (at each scrape)."""

    def collect(self) -> Iterable[Family]: ...


class Registry:
    """The runtime's metrics: every owner's families, on one private registry."""

    def __init__(self) -> None:
        # auto_describe: a name registered twice (a role metric named as a built-in
        # family, say) is refused with ValueError.
        self._registry = CollectorRegistry(auto_describe=True)

    def counter(self, name: str, text: str, labels: Sequence[str] = ()) -> Counter:
        """A counter, exposed as ``<name>_total``."""
        return Counter(name, text, labels, registry=self._registry)

    def gauge(self, name: str, text: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, text, labels, registry=self._registry)

    def histogram(
        self,
        name: str,
        text: str,
        labels: Sequence[str] = (),
        *,
        buckets: Sequence[float] = GO_DEFAULT_BUCKETS,
    ) -> Histogram:
        return Histogram(name, text, labels, buckets=buckets, registry=self._registry)

    def summary(self, name: str, text: str) -> Summary:
        return Summary(name, text, registry=self._registry)

    def register(self, collector: Collector) -> None:
        """Add families read at scrape time; a name already in use raises ValueError."""
        self._registry.register(collector)

    def collect(self) -> Iterable[Family]:
        """Every family, in the order registered (the exposition sorts them)."""
        return self._registry.collect()
