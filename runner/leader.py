"""Leader election on a coordination.k8s.io/v1 Lease, client-go's algorithm.

A candidate takes the Lease when it is free, released, or not renewed for
``lease_duration`` as observed on the candidate's own monotonic clock (no
cross-machine clock comparison). All writes carry the resourceVersion, so two
candidates can never both win. The leader renews every ``retry_period``; if it
cannot renew within ``renew_deadline`` it has lost, and the manager exits
at once — like controller-runtime — so two reconcilers never run together.
On graceful shutdown the leader releases the Lease so a standby takes over
without waiting for expiry.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject

log = logging.getLogger("runner.leader")

LEASE = GVK("coordination.k8s.io", "v1", "Lease")


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


class LeaderElector:
    def __init__(
        self,
        *,
        client: Client,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._duration = lease_duration
        self._deadline = renew_deadline
        self._retry = retry_period
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self.is_leader = threading.Event()

    # -- one attempt --------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        try:
            lease = self._client.get(LEASE, name=self.name, namespace=self.namespace)
        except kube_errors.NotFoundError:
            return self._create()
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self._duration)
        expired = time.monotonic() > self._observed_at + duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        now = _micro_time()
        new_spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self._duration),
            "renewTime": now,
            "acquireTime": spec.get("acquireTime") if holder == self.identity else now,
            "leaseTransitions": transitions if holder == self.identity else transitions + 1,
        }
        lease["spec"] = new_spec
        try:
            self._client.update(LEASE, lease)  # carries resourceVersion: compare-and-swap
        except kube_errors.ConflictError:
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        return True

    def _create(self) -> bool:
        now = _micro_time()
        body: KubeObject = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self._duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self._client.create(LEASE, body, namespace=self.namespace)
        except kube_errors.ConflictError:
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        return True

    # -- loops --------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or ``stop`` is set (False)."""
        log.info(
            "waiting for leadership",
            extra={"lease": f"{self.namespace}/{self.name}", "identity": self.identity},
        )
        while not stop.is_set():
            try:
                if self.try_acquire_or_renew():
                    self.is_leader.set()
                    log.info("became leader", extra={"lease": f"{self.namespace}/{self.name}"})
                    return True
            except kube_errors.KubeError as exc:
                log.warning("lease check failed", extra={"error": str(exc)})
            stop.wait(self._retry)
        return False

    def keep(self, stop: threading.Event, *, on_lost: Callable[[], None]) -> None:
        """Renew until ``stop``; call ``on_lost`` if renewal fails for ``renew_deadline``."""
        last_renewed = time.monotonic()
        while not stop.wait(self._retry):
            try:
                if self.try_acquire_or_renew():
                    last_renewed = time.monotonic()
                    continue
                reason = "lease taken by another candidate"
            except kube_errors.KubeError as exc:
                reason = str(exc)
            if time.monotonic() - last_renewed > self._deadline or reason.startswith("lease taken"):
                self.is_leader.clear()
                log.error("leadership lost", extra={"reason": reason})
                on_lost()
                return

    def release(self) -> None:
        """Give the Lease up so a standby need not wait for it to expire."""
        if not self.is_leader.is_set():
            return
        try:
            lease = self._client.get(LEASE, name=self.name, namespace=self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = None
            lease["spec"]["leaseDurationSeconds"] = 1
            self._client.update(LEASE, lease)
            log.info("released leadership")
        except kube_errors.KubeError as exc:
            log.warning("could not release the lease", extra={"error": str(exc)})
        finally:
            self.is_leader.clear()
