"""Where one reconcile happens: the controller's workers take keys from the queue and apply
the result semantics (``controller``); ``reconciler`` reads the object, marks it Running,
runs Ansible and writes the outcome; ``overrides`` holds the CR's annotations to their ranges;
``pause`` is the paused annotation; ``startup`` spreads unchanged CRs' first runs after a restart.
Flow: watch → queue → **reconcile** → ansible → status.
"""
