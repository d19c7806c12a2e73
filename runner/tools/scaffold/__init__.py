"""Authoring commands: ``playbook-operator init``, ``create api`` and ``create webhook``.

Not a stage of the runtime flow (watch → queue → reconcile → ansible → status): these
write the files the flow reads — ``watches.yaml``, roles and playbooks — and the project
around them (CRDs, RBAC, samples, molecule scenarios, Makefile, Dockerfile), in
operator-sdk's Ansible operator layout. Modules:

- :mod:`~runner.tools.scaffold.names`: Kubernetes' naming rules for groups, versions, kinds;
- :mod:`~runner.tools.scaffold.templates`: the template files (package data) and their rendering;
- :mod:`~runner.tools.scaffold.project`: ``init`` and the ``PROJECT`` file;
- :mod:`~runner.tools.scaffold.api`: ``create api``;
- :mod:`~runner.tools.scaffold.webhook`: ``create webhook`` (admission webhooks as roles);
- :mod:`~runner.tools.scaffold.devhooks`: ``make run``'s webhook certificate and
  configurations (``python -m runner.tools.scaffold.devhooks``, from the Makefiles);
- :mod:`~runner.tools.scaffold.commands`: the subcommands ``runner.cli`` wires in.

Nothing of the runtime below ``runner.base.errors`` is imported (an import contract in
pyproject.toml keeps it so), and the runtime never imports this package.
"""
