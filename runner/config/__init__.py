"""Configuration: watches.yaml (``watches``), label selectors (``selector``) and the one
settings object built from flags, environment and watches (``settings``), the
annotations a CR tunes its reconciles with (``cr_annotations``) and the runner
directory's claim (``rundir``).
It sits below every stage of the flow watch → queue → reconcile → ansible → status.
"""
