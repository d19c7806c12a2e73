"""What runs asked of the API through the proxy: the verbs RBAC must allow, the writes refused.

Part of the Ansible ↔ API stage (see the package docstring). Every request a run
sends is noted in the RBAC record (:mod:`runner.rbac.record`) with the verb it
needed — answered from a cache or by the API server, and a 403 as a denial named
with the run's current task. A read-only proxy (``playbook-operator preview``,
admission webhooks) keeps each write it refused, for the report of what a run
would have changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from runner.proxy import sessions
from runner.rbac import record as rbac_record
from runner.rbac import rules as rbac_rules


@dataclass(frozen=True)
class RefusedWrite:
    """A write a read-only proxy answered with 403 instead of forwarding it."""

    method: str
    path: str
    body: bytes | None


class Audit:
    """The proxy's account of its runs' requests (``rbac`` None: only refused writes)."""

    def __init__(self, rbac: rbac_record.Record | None) -> None:
        self.rbac = rbac  # what each run's requests needed of RBAC, and what was denied
        self.refused: list[RefusedWrite] = []
        self._lock = threading.Lock()

    def account(
        self,
        session: sessions.Session,
        *,
        method: str,
        path: str,
        status: int = 0,
        cached: bool = False,
    ) -> None:
        """Note the verb a run's request needed (``cached``: answered from an informer;
        ``status``: the API server's answer, 0 if it never saw the request); a 403 from
        the API server is a denial, named with the run's current task."""
        if self.rbac is None:
            return
        use = rbac_rules.use_of(method, path)
        if use is None:
            return
        owner = session.owner
        source = rbac_rules.CACHE if cached else rbac_rules.RUN
        self.rbac.used(owner.gvk, use, source=source)
        if status == 403:
            self.rbac.denied(owner.gvk, use, run=(owner.gvk, owner.namespace, owner.name))

    def refuse(self, method: str, path: str, body: bytes | None) -> None:
        """Note a write a read-only proxy did not let through."""
        with self._lock:
            self.refused.append(RefusedWrite(method=method, path=path, body=body))
