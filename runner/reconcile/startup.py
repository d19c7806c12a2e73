"""A restart without a storm: which custom resources may wait, and until when.

Flow: watch → **queue** → reconcile. After a restart the primary informers list
every CR; upstream runs each of them at once. Most did not change while the
runner was away, so a CR whose status says its last run succeeded at its
current generation, and whose children are as that run left them, is put in
the queue with a delay instead: the delays are spread over
``--startup-resync-window`` (jitter, at most ``--startup-resync-rate`` per
second), and none falls in the window's first tenth, which is left to the CRs
that run at once (new, changed, failed, never seen succeed).

"Children as the run left them" is checked against a record the reconciler
writes into the CR's status with the Successful condition
(``status.reconciledChildren``): the children the run's Ansible read or wrote
through the proxy (:class:`Children`), each as ``apiVersion/kind/namespace/name``,
and a digest over each one's uid and its ``metadata.generation`` (kinds without
one: its ``resourceVersion``). At start-up each recorded child is read again
and the digest recomputed; a child deleted, re-created, or with a new spec
(or, without a generation, any change) makes the CR run at once. Not seen: a
change to a generation-bearing child's labels or annotations, or to a child the
run never touched through the proxy; the spread run catches those within the
window. A CRD whose status schema prunes unknown fields keeps no record, so its
CRs run at once as upstream does.

Imports: the kube layer's types only; the reads go through a callable.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runner.kube.types import GVK, KubeObject

log = logging.getLogger("runner.startup")

#: The status key the record lives under, written with the Successful condition.
STATUS_FIELD = "reconciledChildren"
#: More children than this: no record (the CR runs at once after a restart), which
#: bounds both the status size and the reads made at start-up per CR.
MAX_RECORDED = 64
#: The share of the window kept for the CRs that run at once.
_FLOOR = 0.1


@dataclass(frozen=True, order=True)
class Child:
    """One child, as a run saw it through the proxy."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def ref(self) -> str:
        return f"{self.api_version}/{self.kind}/{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, ref: str) -> Child | None:
        parts = ref.rsplit("/", 3)
        if len(parts) != 4 or not all((parts[0], parts[1], parts[3])):
            return None
        return cls(api_version=parts[0], kind=parts[1], namespace=parts[2], name=parts[3])


# Reads a recorded child of the CR (the second argument); None: the child is gone.
Reader = Callable[[Child, KubeObject], KubeObject | None]


def version_of(obj: KubeObject) -> str:
    """What "unchanged" compares: uid and generation (else resourceVersion).

    Generation, where a kind has one, so that status updates by the child's own
    controller (a Deployment's replicas) do not count as change.
    """
    meta = obj.get("metadata") or {}
    generation = meta.get("generation")
    version = f"g{generation}" if generation else f"rv{meta.get('resourceVersion', '')}"
    return f"{meta.get('uid', '')}:{version}"


def digest(seen: Mapping[Child, str]) -> str:
    text = "\n".join(f"{child.ref}={seen[child]}" for child in sorted(seen))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def record(seen: Mapping[Child, str]) -> dict[str, Any] | None:
    """The status value for a successful run's children (None: too many to record)."""
    if len(seen) > MAX_RECORDED:
        return None
    return {"digest": digest(seen), "objects": sorted(child.ref for child in seen)}


class Children:
    """The children each running reconcile's Ansible touched, by the owner's uid.

    Only owners between :meth:`begin` and :meth:`take` are tracked, so memory is
    bounded by the runs in progress. The latest sighting of a child wins: a run
    that reads a child and then patches it records the patched version.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, dict[Child, str]] = {}

    def begin(self, owner_uid: str) -> None:
        with self._lock:
            self._runs[owner_uid] = {}

    def saw(self, owner_uid: str, *, gvk: GVK, obj: KubeObject) -> None:
        """``obj``, of kind ``gvk`` (a list's items carry no kind), was in a run's answer."""
        meta = obj.get("metadata") or {}
        child = Child(
            api_version=gvk.api_version,
            kind=gvk.kind,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name", "")),
        )
        if not (child.api_version and child.kind and child.name):
            return
        with self._lock:
            seen = self._runs.get(owner_uid)
            if seen is not None:
                seen[child] = version_of(obj)

    def take(self, owner_uid: str) -> dict[Child, str]:
        with self._lock:
            return self._runs.pop(owner_uid, None) or {}


def succeeded_at_generation(obj: KubeObject) -> bool:
    """Successful=True and observedGeneration equal to the CR's generation."""
    meta = obj.get("metadata") or {}
    status = obj.get("status")
    if not isinstance(status, dict) or meta.get("deletionTimestamp"):
        return False
    if status.get("observedGeneration") != meta.get("generation"):
        return False
    raw = status.get("conditions")
    for condition in raw if isinstance(raw, list) else []:
        if isinstance(condition, dict) and condition.get("type") == "Successful":
            return condition.get("status") == "True"
    return False


class Spread:
    """Decides, for each CR the first list after start-up delivers, when it runs."""

    def __init__(
        self,
        *,
        window: float,
        rate: float,
        read: Reader,
        rng: random.Random | None = None,
    ) -> None:
        self._window = max(0.0, window)
        self._rate = max(0.0, rate)
        self._read = read
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._used: set[int] = set()
        self._overflow = 0
        self.deferred = 0  # how many CRs were given a delay (a log line at start-up)

    def delay(self, obj: KubeObject) -> float | None:
        """Seconds ``obj``'s first run waits, or None: it runs at once.

        Never raises: it runs in the informer's handler, where an exception would
        drop the event, and with it the CR's only run until its next change.
        """
        try:
            return self._delay(obj)
        except Exception as exc:
            log.warning("could not decide to defer; running at once", extra={"error": str(exc)})
            return None

    def _delay(self, obj: KubeObject) -> float | None:
        if self._window <= 0 or not succeeded_at_generation(obj):
            return None
        if not self._unchanged(obj):
            return None
        with self._lock:
            self.deferred += 1
            delay = self._slot()
        if self.deferred == 1:
            log.info(
                "spreading the first runs of unchanged CRs",
                extra={"window_seconds": self._window, "rate_per_second": self._rate},
            )
        meta = obj.get("metadata") or {}
        log.debug(
            "first run deferred: succeeded at its generation, children unchanged",
            extra={
                "object": f"{meta.get('namespace') or ''}/{meta.get('name')}",
                "delay_seconds": round(delay, 1),
            },
        )
        return delay

    def _unchanged(self, obj: KubeObject) -> bool:
        kept = obj["status"].get(STATUS_FIELD)
        if not isinstance(kept, dict) or not isinstance(kept.get("objects"), list):
            return False
        refs = kept["objects"]
        if len(refs) > MAX_RECORDED:
            return False  # not a record the runtime wrote; no unbounded reads
        seen: dict[Child, str] = {}
        for ref in refs:
            child = Child.parse(ref) if isinstance(ref, str) else None
            if child is None:
                return False
            try:
                live = self._read(child, obj)
            except Exception:  # cannot tell: run at once, as without a record
                return False
            if live is None:
                return False  # deleted while the runner was away
            seen[child] = version_of(live)
        return bool(kept.get("digest") == digest(seen))

    def _slot(self) -> float:
        floor = self._window * _FLOOR
        usable = self._window - floor
        if self._rate <= 0:
            return floor + self._rng.uniform(0.0, usable)
        slots = max(1, int(usable * self._rate))
        if len(self._used) < slots:
            slot = self._rng.randrange(slots)
            while slot in self._used:  # linear probe: the set is never full here
                slot = (slot + 1) % slots
            self._used.add(slot)
        else:
            # More CRs than the window holds at the rate cap: queue up after it.
            slot = slots + self._overflow
            self._overflow += 1
        return floor + (slot + self._rng.random()) / self._rate
