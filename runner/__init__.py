"""Playbook Operator: Kubernetes operators written as Ansible roles.

The runtime follows one flow, one package per stage:
watch (``source``) → queue (``queue``) → reconcile (``reconcile``) → Ansible
(``ansible``) → status (``status``). ``manager`` wires the stages together and
``cli`` is the console entry point ``playbook-operator``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
