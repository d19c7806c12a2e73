"""The metrics' lowest layer: the one registry and the text it is served as.

Every package that measures something defines its own families next to what they
measure (``runner/queue/families.py``, ``runner/warm/families.py``, …) and registers
them into one :class:`~runner.prometheus.registry.Registry`; ``runner.operations.metrics``
puts them together and serves them. Modules:

- :mod:`runner.prometheus.registry` — the one registry; the only importer of
  ``prometheus_client`` (an import contract);
- :mod:`runner.prometheus.exposition` — the Prometheus text format written the way Go's
  client writes it (controller-runtime's ``/metrics``).

Import contract: this package imports nothing else of the runtime, so every layer,
warm execution included, may import it.
"""
