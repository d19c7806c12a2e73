"""Where the work lives between an event and its reconcile: the per-key work queue
(``workqueue``: dedup, coalescing while a key runs), its retry delays (``backoff``) and
what it tells the metrics (``meter``).
Flow: watch → **queue** → reconcile → ansible → status.
"""
