"""Running the runtime: the manager that builds and starts everything (``manager``), probes
(``health``), Prometheus metrics (``metrics``) and their access checks (``access``), leader
election (``leader``) and sharded mode (``sharding``).
"""
