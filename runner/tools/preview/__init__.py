"""``playbook-operator preview``: what a custom resource would change, changing nothing.

Runs the CR's role or playbook once against the live cluster in Ansible's check
mode with diffs, through the runtime's own Ansible layer and a read-only proxy:
``target`` (the CR and its watch) → ``session`` (the run) → ``report``;
``command`` turns the subcommand's flags into a run and prints the report. Sits
beside the runtime, above the Ansible and proxy stages it reuses (watch → queue →
reconcile → **ansible** → status): it never watches, queues or writes status.
"""
