"""The RBAC an operator needs, learned from what its runs and the runtime asked for.

``rules`` maps a request to the verb it needs and folds uses into rules in
kubebuilder's order; ``record`` keeps, per watch and bounded, what was used and
what the API server denied (and in which task); ``runtime`` names the runtime's
own needs (informers, status, Events, Leases); ``names`` what a rule may name (no
wildcard, no escapes: Kubernetes names only). The proxy, the watches, the
reconciler and the manager feed the record; ``GET /debug/rbac`` and
``playbook-operator rbac`` (:mod:`runner.tools.rbac`) read it.

A low layer: imports only :mod:`runner.kube` (and the standard library), so every
stage above may call it.
"""
