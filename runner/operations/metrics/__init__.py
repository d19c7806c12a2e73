"""Prometheus metrics of the runtime, plus the endpoint where roles post their own.

Families are defined beside what they measure (``runner/<package>/families.py``)
and registered on the one registry (:mod:`runner.prometheus.registry`, the only
importer of ``prometheus_client``); ``/metrics`` is written as Go's client writes
it (:mod:`runner.prometheus.exposition`). Modules:

- :mod:`~runner.operations.metrics.runtime` — :class:`Metrics`: every owner's families
  on the one registry, the observer the controllers, queues and webhooks report to;
- :mod:`~runner.operations.metrics.custom` — roles' metrics (``osdk_metric``);
- :mod:`~runner.operations.metrics.endpoint` — the HTTP side: ``GET /metrics`` (with
  the :data:`Authorize` check of secure metrics) and roles' ``POST``.

Import each name from the module that defines it. The one name kept here,
:class:`Metrics`, is for runner/operations/controllers.py, which still names
``metrics.Metrics`` (allow-listed in tests/test_architecture.py until it does not).
"""

from runner.operations.metrics.runtime import Metrics

__all__ = ["Metrics"]
