"""Where the work lives between an event and its reconcile: the per-key work queue
(``workqueue``: dedup, coalescing while a key runs, backoff).
Flow: watch → **queue** → reconcile → ansible → status.
"""
