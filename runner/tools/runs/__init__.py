"""``playbook-operator runs <kind>/<name>``: a custom resource's recent runs, read from
the artifacts the runner keeps (``history``), printed by ``command``.

Sits beside the runtime and reads only files: each run's artifact directory under
the runner dir holds ansible-runner's ``status``, ``rc`` and ``job_events/``, and the
runner's :data:`runner.queue.trigger.ARTIFACT` (why it ran, how it went). Imports the
trigger record and the settings' defaults, nothing that watches, queues or runs.
"""
