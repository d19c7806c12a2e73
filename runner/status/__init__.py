"""Where status is written: operator-sdk's conditions and the conflict-safe status write
(``conditions``), Kubernetes Events (``recorder``) and the Failure of objects the informers
could not decode (``rejection``).
Flow: watch → queue → reconcile → ansible → **status**.
"""
