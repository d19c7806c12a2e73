"""The API requests each watch's runs and the runtime made, and those denied.

Fed by the proxy (every request of a run: the verb it needed, whether the API
server answered 403 — for admission webhook runs through :meth:`Record.reads_only`),
by the manager (the runtime's own needs: informers of primaries and dependents,
status writes, Events, Leases) and by the reconciler and the webhooks (which task
a run is in). Read by ``GET /debug/rbac`` and ``playbook-operator
rbac``, which derive least-privilege rules from it, and by the reconciler, which
names a run's denied requests in the CR's Failure condition.

The proxy notes every request as used and then, if the answer was 403, as denied; the
snapshot marks a run's use ``allowed`` only when the API server let at least one of its
requests through, so what reads the record never takes a 403 for a grant the operator
has (and ``playbook-operator rbac`` never writes one by mistake).

Bounded: at most :data:`CAP` distinct uses and denials per watch; what does not fit
is dropped and counted. Holds verbs, resources, namespaces and task names — never
request bodies or tokens.

Keyed by the watch's kind, never by a kind a caller names: an admission run's proxy
session is for the object of an AdmissionReview, whose apiVersion and kind whoever
reaches the webhook port chooses. The admission webhooks' view
(:meth:`Record.reads_only`) therefore notes an entry only under the kind of a run in
progress (the webhooks start each run under its watch's kind) and drops the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.kube.types import GVK
from runner.rbac import rules

CAP = 4096  # distinct (use, source) entries and denials kept per watch
_RUN_DENIALS = 32  # denials a single run keeps for its Failure message

RunKey = tuple[GVK, str, str]  # the CR a run reconciles: kind, namespace, name


@dataclass(frozen=True)
class Denial:
    """A request the API server answered 403, and the task that made it."""

    use: rules.Use
    task: str

    def to_json(self) -> dict[str, str]:
        return {**self.use.to_json(), "task": self.task}


@dataclass
class _Watch:
    uses: dict[tuple[rules.Use, str], int] = field(default_factory=dict)  # requests noted
    refused: dict[rules.Use, int] = field(default_factory=dict)  # of a run's uses: 403s
    denials: dict[Denial, int] = field(default_factory=dict)
    dropped: int = 0


@dataclass
class _Run:
    task: str = ""
    denials: list[Denial] = field(default_factory=list)


class Record:
    """What each watch (by its primary kind) used and was denied; thread-safe."""

    def __init__(
        self, *, cap: int = CAP, on_denied: Callable[[rules.Use], None] | None = None
    ) -> None:
        self._cap = cap
        self._on_denied = on_denied
        self._lock = threading.Lock()
        self._watches: dict[GVK, _Watch] = {}
        # Runs of one CR never overlap (the queue hands a key to one worker), so the CR
        # names the run in progress. (An admission run's key names its request too.)
        self._runs: dict[RunKey, _Run] = {}
        self._keep: Callable[[rules.Use], bool] = lambda use: True
        self._running_only = False  # the webhooks' view: only kinds of runs in progress

    def reads_only(self) -> Record:
        """This record as the admission webhooks' read-only proxy feeds it: the same
        entries and runs, but only reads are noted as uses — a write that proxy refused
        never reached the API server, and the operator needs no rule for it. Denials
        (the API server's own 403s) are noted whatever the verb. Either is noted only
        under the kind of a run in progress (``run_started``: the watch's kind), and a
        denial only for a run in progress: the proxy's owner of an admission run is
        the request's object, whose kind the caller names."""
        view = Record(cap=self._cap, on_denied=self._on_denied)
        view._lock, view._watches, view._runs = self._lock, self._watches, self._runs
        view._keep = lambda use: use.verb in rules.READS
        view._running_only = True
        return view

    def _known(self, watch: GVK, run: RunKey | None = None) -> bool:
        """Whether an entry may be keyed by ``watch`` (under the lock)."""
        if not self._running_only:
            return True
        if run is not None:
            return run[0] == watch and run in self._runs
        return any(key[0] == watch for key in self._runs)

    def used(self, watch: GVK, use: rules.Use, *, source: str = rules.RUN) -> None:
        if not self._keep(use):
            return
        with self._lock:
            if not self._known(watch):
                return
            entries = self._watches.setdefault(watch, _Watch())
            if (use, source) in entries.uses:
                entries.uses[(use, source)] += 1
                return
            if len(entries.uses) >= self._cap:
                entries.dropped += 1
                return
            entries.uses[(use, source)] = 1

    def denied(self, watch: GVK, use: rules.Use, *, run: RunKey | None = None) -> Denial:
        """Note a 403; the task is the one ``run`` is in (``task_started``)."""
        with self._lock:
            current = self._runs.get(run) if run is not None else None
            denial = Denial(use=use, task=current.task if current else "")
            fits = current is not None and len(current.denials) < _RUN_DENIALS
            if current is not None and fits and denial not in current.denials:
                current.denials.append(denial)
            if self._known(watch, run):
                entries = self._watches.setdefault(watch, _Watch())
                if (use, rules.RUN) in entries.uses:  # noted as used just before: not a grant
                    entries.refused[use] = entries.refused.get(use, 0) + 1
                if denial in entries.denials or len(entries.denials) < self._cap:
                    entries.denials[denial] = entries.denials.get(denial, 0) + 1
                else:
                    entries.dropped += 1
        if self._on_denied is not None:
            self._on_denied(use)
        return denial

    # -- one run ------------------------------------------------------------

    def run_started(self, run: RunKey) -> None:
        with self._lock:
            self._runs[run] = _Run()

    def task_started(self, run: RunKey, task: str) -> None:
        with self._lock:
            current = self._runs.get(run)
            if current is not None:
                current.task = task

    def run_ended(self, run: RunKey) -> list[Denial]:
        """The run's denials, in order; forgets the run."""
        with self._lock:
            current = self._runs.pop(run, None)
        return current.denials if current else []

    # -- reading --------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The record as ``GET /debug/rbac`` serves it (and ``rbac --from`` reads it)."""
        with self._lock:
            watches = [
                {
                    "group": gvk.group,
                    "version": gvk.version,
                    "kind": gvk.kind,
                    "uses": [
                        {
                            **use.to_json(),
                            "source": source,
                            "allowed": source != rules.RUN or entries.refused.get(use, 0) < count,
                        }
                        for (use, source), count in sorted(entries.uses.items())
                    ],
                    "denied": [
                        {**denial.to_json(), "count": count}
                        for denial, count in sorted(
                            entries.denials.items(), key=lambda item: (item[0].use, item[0].task)
                        )
                    ],
                    "dropped": entries.dropped,
                }
                for gvk, entries in sorted(
                    self._watches.items(), key=lambda item: (item[0].group, item[0].kind)
                )
            ]
        return {"watches": watches}


def needs_message(denials: list[Denial]) -> str:
    """``needs: apps deployments patch in namespace ns1; ...`` for a Failure message."""
    return "needs: " + "; ".join(dict.fromkeys(d.use.needs() for d in denials))
