"""The annotations a custom resource may carry to tune its own reconciles.

operator-sdk's (``ansible.sdk.operatorframework.io/…``: Ansible verbosity, reconcile
period, artifacts kept) and the runtime's own pause; :mod:`runner.reconcile.tuning`,
:mod:`runner.reconcile.overrides` and :mod:`runner.reconcile.pause` read them.
"""

from __future__ import annotations

VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"
RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"
#: "true" pauses reconciling one CR (runner.reconcile.pause); deletion still runs.
PAUSED_ANNOTATION = "playbook-operator.io/paused"
