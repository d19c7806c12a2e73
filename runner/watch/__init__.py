"""Where events enter: informers list and watch the API server (``source``), events are
filtered (``predicate``) and children's events are mapped to their owners (``dependents``).
Flow: **watch** → queue → reconcile → ansible → status.
"""
