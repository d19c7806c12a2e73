"""Admission webhooks written as Ansible: a kind's role validates or mutates its objects.

Beside the reconcile flow (watch → queue → reconcile → ansible → status), not in
it: the API server calls the runner over HTTPS with an AdmissionReview before it
stores an object; the kind's ``validation:`` or ``mutation:`` role runs at once
(never behind the reconcile queue), read-only against the cluster, and its
outcome is the answer.

- :mod:`runner.webhook.review`: AdmissionReview v1 in and out, the JSONPatch from
  the object a role wants;
- :mod:`runner.webhook.hooks`: one admission run — extra vars, the read-only proxy
  session, the role's verdict, the failure policy;
- :mod:`runner.webhook.server`: the bounded HTTPS listener on ``--webhook-port``,
  its certificates (reloaded when they change) and its concurrency limit.

Imports the Ansible stage, the proxy, configuration, the RBAC record, the base and
the kube client; the manager (runner.operations) wires it in, counts its requests
and gives it the RBAC record its runs' reads go into.
"""

from __future__ import annotations
