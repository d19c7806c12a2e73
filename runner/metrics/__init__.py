"""The metrics' lowest layer: the one registry and the text it is served as.

Every package that measures something defines its own families next to what they
measure (``runner/queue/metrics.py``, ``runner/warm/metrics.py``, …) and registers
them into one :class:`~runner.metrics.registry.Registry`; ``runner.operations.metrics``
puts them together and serves them. Modules:

- :mod:`runner.metrics.registry` — the one registry; the only importer of
  ``prometheus_client`` (an import contract);
- :mod:`runner.metrics.exposition` — the Prometheus text format written the way Go's
  client writes it (controller-runtime's ``/metrics``).

Import contract: this package imports nothing else of the runtime, so every layer,
warm execution included, may import it.
"""
