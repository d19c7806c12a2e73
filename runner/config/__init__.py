"""Configuration: watches.yaml (``watches``), label selectors (``selector``) and the one
settings object built from flags, environment and watches (``options``).
It sits below every stage of the flow watch → queue → reconcile → ansible → status.
"""
