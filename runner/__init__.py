"""Playbook Operator: Kubernetes operators written as Ansible roles.

The runtime follows one flow, one folder per stage: events enter in ``watch``, wait in
``queue``, one reconcile happens in ``reconcile``, Ansible is started in ``ansible`` and
status is written in ``status``. Below them ``proxy``, ``warm``, ``config``, ``kube``
and ``base``; above them ``operations`` (the manager that wires the stages) and
``tools`` for authors. ``cli`` is the console entry point ``playbook-operator``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
