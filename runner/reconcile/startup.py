"""A restart without a storm: which custom resources may wait, and until when.

Flow: watch → **queue** → reconcile. After a restart the primary informers list
every CR; upstream runs each of them at once. Most did not change while the
runner was away, so a CR is put in the queue with a delay instead when there is
positive evidence that nothing its last run depended on changed: the delays are
spread over ``--startup-resync-window`` (jitter, at most ``--startup-resync-rate``
per second), and none falls in the window's first tenth, which is left to the CRs
that run at once. Missing or partial evidence means "run now".

The evidence is a record the reconciler writes into the CR's status with the
Successful condition (``status.reconciledChildren``), and a CR waits only when all
of these hold:

- its status says its last run succeeded at its current generation;
- the record names at least one child: the children the run's Ansible read or
  wrote through the proxy (:class:`Children`), each as
  ``apiVersion/kind/namespace/name``. An empty record (``--inject-owner-ref=false``,
  or a role that reaches its children outside the proxy) proves nothing;
- the record's ``inputs`` equal this process's (:mod:`runner.reconcile.evidence`):
  the role or playbook files, the watches.yaml entry with its vars and finalizer,
  the runtime, Ansible and the runner package. They are taken when the run starts,
  so an edit during the run makes the next start run the CR;
- each recorded child, read again, has the same uid, ``metadata.generation`` (kinds
  without one: ``resourceVersion``), and labels and annotations (but those of
  Kubernetes' own controllers, which the dependent watches ignore too), as the
  record's digest says;
- each read answers after the child kind's dependent watch has listed (the reader
  raises :class:`Unsettled` otherwise): a change between a GET and that first list
  would reach the watch as a creation, which triggers nobody.

Still not seen: a change to a child the run never touched through the proxy when it
touched others through it. A CRD whose status schema prunes unknown fields keeps no
record, so its CRs run at once as upstream does.

Imports: the kube layer's types, the dependent watches' annotation filter and the
evidence digests; the reads go through a callable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runner.kube.types import GVK, KubeObject
from runner.reconcile import evidence
from runner.watch import predicate

log = logging.getLogger("runner.startup")

#: The status key the record lives under, written with the Successful condition.
STATUS_FIELD = "reconciledChildren"
#: More children than this: no record (the CR runs at once after a restart), which
#: bounds both the status size and the reads made at start-up per CR.
MAX_RECORDED = 64
#: The share of the window kept for the CRs that run at once.
_FLOOR = 0.1

#: The current digests of one watch's inputs (:meth:`evidence.Inputs.current`); None:
#: they cannot be digested, and nothing of that watch is deferred.
Current = Callable[[], Mapping[str, str] | None]


class Unsettled(Exception):  # noqa: N818 - a state, not a failure of the caller
    """A child was read before its kind's dependent watch listed: the read may race it."""


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
# Raises Unsettled when the answer could race the kind's dependent watch's first list.
Reader = Callable[[Child, KubeObject], KubeObject | None]


def version_of(obj: KubeObject) -> str:
    """What "unchanged" compares: uid, generation (else resourceVersion), and labels
    and annotations.

    Generation, where a kind has one, so that status updates by the child's own
    controller (a Deployment's replicas) do not count as change; labels and annotations
    because a generation does not move with them. Annotations of Kubernetes' own
    controllers (``deployment.kubernetes.io/revision``, ``kubectl.kubernetes.io/…``)
    are left out, as the dependent watches leave them out of what triggers a run.
    """
    meta = obj.get("metadata") or {}
    generation = meta.get("generation")
    version = f"g{generation}" if generation else f"rv{meta.get('resourceVersion', '')}"
    annotations = meta.get("annotations") or {}
    marks = {
        "labels": meta.get("labels") or {},
        "annotations": {
            k: v for k, v in annotations.items() if not predicate.controller_annotation(k)
        },
    }
    text = json.dumps(marks, sort_keys=True, separators=(",", ":"))
    return f"{meta.get('uid', '')}:{version}:m{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def digest(seen: Mapping[Child, str]) -> str:
    text = "\n".join(f"{child.ref}={seen[child]}" for child in sorted(seen))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class Seen(dict[Child, str]):
    """What one run touched (child → :func:`version_of`), and the digests of its
    inputs when it started (None: not taken, or not digestible)."""

    inputs: Mapping[str, str] | None = None


def record(seen: Mapping[Child, str]) -> dict[str, Any] | None:
    """The status value for a successful run (None: no evidence to keep).

    None also when nothing was seen through the proxy, when there are too many
    children to record, or when the run's inputs were not digested: a record must
    prove the CR unchanged, and an empty or partial one cannot.
    """
    inputs = seen.inputs if isinstance(seen, Seen) else None
    if not seen or len(seen) > MAX_RECORDED or not inputs:
        return None
    return {
        "digest": digest(seen),
        "objects": sorted(child.ref for child in seen),
        "inputs": dict(inputs),
    }


class _Runs:
    """The runs in progress, shared by every watch's :class:`Children`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_owner: dict[str, Seen] = {}


class Children:
    """The children each running reconcile's Ansible touched, by the owner's uid.

    Only owners between :meth:`begin` and :meth:`take` are tracked, so memory is
    bounded by the runs in progress. The latest sighting of a child wins: a run
    that reads a child and then patches it records the patched version. One is
    shared by every watch; :meth:`for_watch` gives a watch's reconciler a view that
    also takes the digests of the watch's inputs when a run begins.
    """

    def __init__(self, *, inputs: Current | None = None, runs: _Runs | None = None) -> None:
        self._inputs = inputs
        self._runs = runs or _Runs()

    def for_watch(self, inputs: Current) -> Children:
        """The same record, for the runs of the watch whose inputs ``inputs`` digests."""
        return Children(inputs=inputs, runs=self._runs)

    def begin(self, owner_uid: str) -> None:
        seen = Seen()
        seen.inputs = _inputs_now(self._inputs)
        with self._runs.lock:
            self._runs.by_owner[owner_uid] = seen

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
        with self._runs.lock:
            seen = self._runs.by_owner.get(owner_uid)
            if seen is not None:
                seen[child] = version_of(obj)

    def take(self, owner_uid: str) -> Seen:
        with self._runs.lock:
            return self._runs.by_owner.pop(owner_uid, None) or Seen()


def _inputs_now(inputs: Current | None) -> Mapping[str, str] | None:
    if inputs is None:
        return None
    try:
        return inputs()
    except Exception as exc:  # no digest: no record, the CR runs at once after a restart
        log.warning("could not digest the run's inputs", extra={"error": str(exc)})
        return None


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


class _Slots:
    """The window's slots, shared by every watch's :class:`Spread`: the rate cap holds
    across kinds."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lock = threading.Lock()
        self.used: set[int] = set()
        self.overflow = 0
        self.deferred = 0


class Spread:
    """Decides, for each CR the first list after start-up delivers, when it runs.

    One is made for every kind; :meth:`for_watch` gives each watch's controller a
    view that knows the watch's inputs. Without them (the shared one) nothing waits.
    """

    def __init__(
        self,
        *,
        window: float,
        rate: float,
        read: Reader,
        rng: random.Random | None = None,
        inputs: Current | None = None,
        slots: _Slots | None = None,
    ) -> None:
        self._window = max(0.0, window)
        self._rate = max(0.0, rate)
        self._read = read
        self._inputs = inputs
        self._slots = slots or _Slots(rng or random.Random())

    def for_watch(self, inputs: Current) -> Spread:
        """The same window and slots, for the CRs of the watch ``inputs`` digests."""
        return Spread(
            window=self._window, rate=self._rate, read=self._read, inputs=inputs, slots=self._slots
        )

    @property
    def deferred(self) -> int:
        """How many CRs were given a delay, across every kind."""
        return self._slots.deferred

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
        if self._window <= 0:
            return None
        meta = obj.get("metadata") or {}
        target = f"{meta.get('namespace') or ''}/{meta.get('name')}"
        why = self._why_now(obj)
        if why is not None:
            log.debug("first run not deferred", extra={"object": target, "reason": why})
            return None
        with self._slots.lock:
            self._slots.deferred += 1
            first = self._slots.deferred == 1
            delay = self._slot()
        if first:
            log.info(
                "spreading the first runs of unchanged CRs",
                extra={"window_seconds": self._window, "rate_per_second": self._rate},
            )
        log.debug(
            "first run deferred: succeeded at its generation, inputs and children unchanged",
            extra={"object": target, "delay_seconds": round(delay, 1)},
        )
        return delay

    def _why_now(self, obj: KubeObject) -> str | None:
        """Why ``obj`` must run at once; None: the evidence says nothing changed."""
        if not succeeded_at_generation(obj):
            return "no success at the current generation"
        kept = obj["status"].get(STATUS_FIELD)
        if not isinstance(kept, dict) or not isinstance(kept.get("objects"), list):
            return "no record of the last run"
        refs = kept["objects"]
        if not refs:
            return "the last run touched no child through the proxy"
        if len(refs) > MAX_RECORDED:
            return "not a record the runtime wrote"  # and no unbounded reads
        now = _inputs_now(self._inputs)
        if now is None:
            return "the inputs cannot be digested"
        moved = evidence.changed(kept.get("inputs"), now)
        if moved:
            return "changed since the last success: " + ", ".join(moved)
        seen: dict[Child, str] = {}
        for ref in refs:
            child = Child.parse(ref) if isinstance(ref, str) else None
            if child is None:
                return "not a record the runtime wrote"
            try:
                live = self._read(child, obj)
            except Unsettled as exc:
                return str(exc) or "a dependent watch has not listed yet"
            except Exception as exc:  # cannot tell: run at once, as without a record
                return f"could not read {child.ref}: {exc}"
            if live is None:
                return f"{child.ref} is gone"  # deleted while the runner was away
            seen[child] = version_of(live)
        if kept.get("digest") != digest(seen):
            return "a child changed"
        return None

    def _slot(self) -> float:
        floor = self._window * _FLOOR
        usable = self._window - floor
        slots = self._slots
        if self._rate <= 0:
            return floor + slots.rng.uniform(0.0, usable)
        count = max(1, int(usable * self._rate))
        if len(slots.used) < count:
            slot = slots.rng.randrange(count)
            while slot in slots.used:  # linear probe: the set is never full here
                slot = (slot + 1) % count
            slots.used.add(slot)
        else:
            # More CRs than the window holds at the rate cap: queue up after it.
            slot = count + slots.overflow
            slots.overflow += 1
        return floor + (slot + slots.rng.random()) / self._rate
