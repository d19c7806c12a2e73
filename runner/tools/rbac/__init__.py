"""``playbook-operator rbac``: the least-privilege RBAC of an operator, from what it used.

``sample`` runs the role once per sample CR in preview's check mode with a
recording proxy; ``derive`` turns a record (that one, or a running runner's
``GET /debug/rbac``) into rules in kubebuilder's order — only from requests that
succeeded; denials are reported, not granted — and drops what ``catalog`` (the
cluster's API discovery) does not serve; ``documents`` puts each rule in the
ClusterRole or in a namespace's Role, as its requests were scoped, and compares them
with ``config/rbac/role.yaml``; ``consent`` asks the author, rule by rule, before a
denied request is granted (``--grant-denied``); ``command`` turns the subcommand's
flags into output and, with ``--write``, the role file. Reaches the runtime only
through its RBAC record (:mod:`runner.rbac`), proxy, Ansible, kube client and
configuration; the runtime never imports it.
"""
