"""Where one reconcile happens: the controller's workers take keys from the queue and apply
the result semantics (``controller``); ``reconciler`` reads the object and walks one
reconcile through its steps: ``tuning`` (the CR's annotation overrides), ``finalizer``,
``progress`` (Running, then the outcome, as conditions and Events) and ``run`` (the Ansible
run, planned by ``runner.ansible.plan``); ``overrides`` holds the CR's annotations to their ranges;
``pause`` is the paused annotation; ``startup`` spreads unchanged CRs' first runs after a restart.
Flow: watch → queue → **reconcile** → ansible → status.
"""
