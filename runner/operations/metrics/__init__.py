"""Prometheus metrics of the runtime, plus the endpoint where roles post their own.

Families are defined beside what they measure (``runner/<package>/metrics.py``)
and registered on the one registry (:mod:`runner.metrics.registry`, the only
importer of ``prometheus_client``); ``/metrics`` is written as Go's client writes
it (:mod:`runner.metrics.exposition`). Modules:

- :mod:`~runner.operations.metrics.runtime` — :class:`Metrics`: every owner's families
  on the one registry, the observer the controllers, queues and webhooks report to;
- :mod:`~runner.operations.metrics.custom` — roles' metrics (``osdk_metric``);
- :mod:`~runner.operations.metrics.endpoint` — the HTTP side: ``GET /metrics`` (with
  the :data:`Authorize` check of secure metrics) and roles' ``POST``.

The names below are the manager's wiring API, importable from here as before the split.
"""

from runner.ansible.metrics import gvk_label
from runner.metrics.exposition import exposition, go_float
from runner.metrics.registry import GO_DEFAULT_BUCKETS
from runner.operations.metrics.endpoint import (
    CUSTOM_LIMITS,
    DEBUG_RBAC,
    Authorize,
    custom_handler,
    exposition_handler,
)
from runner.operations.metrics.runtime import Metrics
from runner.queue.metrics import WORKQUEUE_BUCKETS
from runner.reconcile.metrics import RECONCILE_TIME_BUCKETS, RUNTIME_RESULTS

__all__ = [
    "CUSTOM_LIMITS",
    "DEBUG_RBAC",
    "GO_DEFAULT_BUCKETS",
    "RECONCILE_TIME_BUCKETS",
    "RUNTIME_RESULTS",
    "WORKQUEUE_BUCKETS",
    "Authorize",
    "Metrics",
    "custom_handler",
    "exposition",
    "exposition_handler",
    "go_float",
    "gvk_label",
]
