"""The Ansible stage: watch → queue → reconcile → **ansible** → status.

Given a custom resource, :mod:`~runner.ansible.extravars` builds operator-sdk's
extra vars (:mod:`~runner.ansible.snake` snake_cases spec keys);
:class:`~runner.ansible.launch.AnsibleRunner` runs the role or playbook through
ansible-runner and :mod:`~runner.ansible.events` folds the job events into a
:class:`~runner.ansible.launch.RunResult`, redacting Secrets on the way
(:mod:`~runner.ansible.redact`); :mod:`~runner.ansible.privatedir` keeps the
CR's private data dir to what the runtime wrote. Nothing else in the runtime knows
ansible-runner's API. The ``playbook_operator.util`` collection the roles call
ships in ``runner/collection``.
"""
