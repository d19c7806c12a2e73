"""Leader election on a coordination.k8s.io/v1 Lease, client-go's algorithm.

A candidate takes the Lease when it is free, released, or not renewed for
``lease_duration`` as observed on the candidate's own monotonic clock (no
cross-machine clock comparison). All writes carry the resourceVersion, so two
candidates can never both win. The leader renews every ``retry_period``.

Fencing — never two reconcilers at once: a standby may take the Lease
``lease_duration`` after it saw the last renewal, which is after that renewal
was sent. So the leader counts its ``renew_deadline`` (shorter) from when it
*sent* its last successful write, on its own timer thread, and at that moment
has lost: ``on_lost`` runs (the manager exits with code 3, ending every run)
even while the renewing thread is still blocked in a request to a silent API
server. Every Lease request is bounded, as client-go's are, by the time left
before that deadline (the HTTP read timeout), so a hung renewal neither outlives
it nor holds the Lease thread for the client's default 30 s.

On graceful shutdown the manager keeps renewing until the runs ended, then
the leader releases the Lease so a standby takes over without waiting for
expiry (:meth:`LeaderElector.release`, which also disarms the fence).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

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
        self._deadline = min(renew_deadline, lease_duration)
        self._retry = retry_period
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self.is_leader = threading.Event()
        # When the latest successful write of the Lease by this candidate was sent.
        self._renewed_at: float | None = None
        # Serialises writes (renewals, release): no renewal may follow the release.
        self._writing = threading.Lock()
        # Guards _renewed_at, _released, _lost; wakes the fence when they change.
        self._changed = threading.Condition()
        self._released = False
        self._lost = False

    # -- requests, each bounded by the renew deadline ----------------------

    def _path(self, name: str = "") -> str:
        base = f"/apis/{LEASE.group}/{LEASE.version}/namespaces/{self.namespace}/leases"
        return f"{base}/{name}" if name else base

    def budget(self) -> float:
        """The read timeout of the next Lease request: the time left before the renew
        deadline while leading, a whole renew deadline while not (yet) leading."""
        with self._changed:
            renewed = self._renewed_at
        if renewed is None or not self.is_leader.is_set():
            return self._deadline
        return renewed + self._deadline - time.monotonic()

    def _request(self, method: str, path: str, *, body: Any = None) -> KubeObject:
        timeout = self.budget()
        if timeout <= 0:
            raise kube_errors.TransportError(f"{method} {path}: renew deadline passed")
        answer: KubeObject = self._client.request(method, path, body=body, timeout=timeout)
        return answer

    def _renewed(self, sent: float) -> None:
        with self._changed:
            self._renewed_at = sent
            self._changed.notify_all()

    # -- one attempt --------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        try:
            lease = self._request("GET", self._path(self.name))
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
        sent = time.monotonic()
        try:
            # Carries the resourceVersion: compare-and-swap.
            self._request("PUT", self._path(self.name), body=lease)
        except kube_errors.ConflictError:
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        self._renewed(sent)
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
        sent = time.monotonic()
        try:
            self._request("POST", self._path(), body=body)
        except kube_errors.ConflictError:
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        self._renewed(sent)
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
        """Renew every ``retry_period`` until ``stop`` (or :meth:`release`).

        ``on_lost`` is called once: when another candidate took the Lease, or — from
        the fence thread this starts, whatever the renewals are blocked in — when
        ``renew_deadline`` passed since the latest successful write was sent.
        """
        threading.Thread(
            target=self._fence, args=(on_lost,), name="lease-fence", daemon=True
        ).start()
        while not stop.wait(self._retry):
            with self._writing:
                with self._changed:
                    if self._released or self._lost:
                        return
                try:
                    if self.try_acquire_or_renew():
                        continue
                except kube_errors.KubeError as exc:
                    # Retried until the fence decides: the deadline is its alone.
                    log.warning("lease renewal failed", extra={"error": str(exc)})
                    continue
            self._lose("lease taken by another candidate", on_lost)
            return

    def _fence(self, on_lost: Callable[[], None]) -> None:
        with self._changed:
            while not (self._released or self._lost):
                assert self._renewed_at is not None, "keep() before acquire()"
                left = self._renewed_at + self._deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            else:
                return
        self._lose(f"Lease not renewed within the renew deadline ({self._deadline:g}s)", on_lost)

    def _lose(self, reason: str, on_lost: Callable[[], None]) -> None:
        with self._changed:
            if self._lost or self._released:
                return
            self._lost = True
            self._changed.notify_all()
        self.is_leader.clear()
        log.error("leadership lost", extra={"reason": reason})
        on_lost()

    def release(self) -> None:
        """Give the Lease up so a standby need not wait for it to expire.

        Call it only once every run has ended: a standby may start at once. It
        stops the renewals and disarms the fence first.
        """
        with self._writing:
            with self._changed:
                lost, self._released = self._lost, True
                self._changed.notify_all()
            if lost or not self.is_leader.is_set():
                return
            try:
                lease = self._request("GET", self._path(self.name))
                if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    return
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                self._request("PUT", self._path(self.name), body=lease)
                log.info("released leadership")
            except kube_errors.KubeError as exc:
                log.warning("could not release the lease", extra={"error": str(exc)})
            finally:
                self.is_leader.clear()
