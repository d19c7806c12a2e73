"""Where status is written: operator-sdk's conditions and the conflict-safe status write
(``conditions``), kstatus' Reconciling, Ready and Stalled beside them (``kstatus``),
Kubernetes Events (``recorder``) and the Failure of objects the informers could not
decode (``rejection``).
Flow: watch → queue → reconcile → ansible → **status**.
"""
