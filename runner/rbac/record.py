"""The API requests each watch's runs and the runtime made, and those denied.

Fed by the proxy (every request of a run: the verb it needed, whether the API
server answered 403 — for admission webhook runs through :meth:`Record.reads_only`),
by the manager (the runtime's own needs: informers of primaries and dependents,
status writes, Events, Leases) and by the reconciler and the webhooks (which task
a run is in). Read by ``GET /debug/rbac`` and ``playbook-operator
rbac``, which derive least-privilege rules from it, and by the reconciler, which
names a run's denied requests in the CR's Failure condition.

Bounded: at most :data:`CAP` distinct uses and denials per watch; what does not fit
is dropped and counted. Holds verbs, resources, namespaces and task names — never
request bodies or tokens.
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
    uses: dict[tuple[rules.Use, str], None] = field(default_factory=dict)
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

    def reads_only(self) -> Record:
        """This record as the admission webhooks' read-only proxy feeds it: the same
        entries and runs, but only reads are noted as uses — a write that proxy refused
        never reached the API server, and the operator needs no rule for it. Denials
        (the API server's own 403s) are noted whatever the verb."""
        view = Record(cap=self._cap, on_denied=self._on_denied)
        view._lock, view._watches, view._runs = self._lock, self._watches, self._runs
        view._keep = lambda use: use.verb in rules.READS
        return view

    def used(self, watch: GVK, use: rules.Use, *, source: str = rules.RUN) -> None:
        if not self._keep(use):
            return
        with self._lock:
            entries = self._watches.setdefault(watch, _Watch())
            if (use, source) in entries.uses:
                return
            if len(entries.uses) >= self._cap:
                entries.dropped += 1
                return
            entries.uses[(use, source)] = None

    def denied(self, watch: GVK, use: rules.Use, *, run: RunKey | None = None) -> Denial:
        """Note a 403; the task is the one ``run`` is in (``task_started``)."""
        with self._lock:
            current = self._runs.get(run) if run is not None else None
            denial = Denial(use=use, task=current.task if current else "")
            fits = current is not None and len(current.denials) < _RUN_DENIALS
            if current is not None and fits and denial not in current.denials:
                current.denials.append(denial)
            entries = self._watches.setdefault(watch, _Watch())
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
                        {**use.to_json(), "source": source} for use, source in sorted(entries.uses)
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
