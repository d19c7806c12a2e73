"""What the runtime itself asks of the API server, recorded beside what the runs asked.

``GET /debug/rbac`` and ``playbook-operator rbac`` (:mod:`runner.rbac`) list the rules
an operator needs; the runs' requests are recorded by the proxy, and the runtime's own
— list and watch each primary kind, write its status and finalizers, inject owner
references, hold Leases, watch the children's kinds — are recorded here, as the
manager wires each watch and as each dependent watch starts.
"""

from __future__ import annotations

from runner.config import entry, sections
from runner.kube.types import GVK, Resource
from runner.rbac import record as rbac_record
from runner.rbac import rules as rbac_rules
from runner.rbac import runtime as rbac_runtime


class RuntimeNeeds:
    """Records the runtime's API uses under the watch they serve."""

    def __init__(
        self,
        *,
        rbac: rbac_record.Record,
        namespaces: tuple[str, ...],
        owner_refs: bool,
        election: sections.ElectionSettings,
        lease_namespace: str,
    ) -> None:
        self._rbac = rbac
        self._namespaces = namespaces  # watched namespaces; empty: all
        self._owner_refs = owner_refs
        self._election = election
        self._lease_namespace = lease_namespace

    def primary(self, watch: entry.Watch, resource: Resource) -> None:
        """What the runtime asks of the API server for ``watch``, whatever its role does."""
        uses = list(
            rbac_runtime.primary(
                group=watch.gvk.group,
                plural=resource.plural,
                namespaces=self._namespaces if resource.namespaced else (),
                status=watch.manage_status,
                finalizer=watch.finalizer is not None,
                owner_refs=self._owner_refs,
            )
        )
        if self._election.leader_elect or self._election.sharded:
            uses += rbac_runtime.leases(
                namespace=self._lease_namespace, sharded=self._election.sharded
            )
        for use in uses:
            self._rbac.used(watch.gvk, use, source=rbac_rules.RUNTIME)

    def dependent(self, owner: GVK, resource: Resource) -> None:
        """A dependent watch of ``resource`` lists and watches it for ``owner``'s watch."""
        for use in rbac_runtime.dependent(
            group=resource.gvk.group,
            plural=resource.plural,
            namespaces=self._namespaces if resource.namespaced else (),
        ):
            self._rbac.used(owner, use, source=rbac_rules.RUNTIME)
