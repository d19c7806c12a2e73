"""kstatus' conditions — Reconciling, Ready, Stalled — beside operator-sdk's, for GitOps tools.

Flow: watch → queue → reconcile → ansible → **status**. Flux (``wait: true``), Argo CD and
``kubectl wait`` judge a custom resource by these conditions and ``observedGeneration``
(sigs.k8s.io/cli-utils' kstatus: Reconciling=True → InProgress, Stalled=True → Failed,
Ready=False → InProgress, Ready=True → Current). operator-sdk's Running, Successful and
Failure are written unchanged by :mod:`runner.status.conditions`; these transitions are
applied on top of them, each stamping ``observedGeneration`` on what it writes:

=================  ============================================================
phase              kstatus conditions (generation g: the one the run reads)
=================  ============================================================
``waiting``        a new generation: Reconciling{True, WaitingForSlot}
``running``        a new generation: Reconciling{True, Running}, Ready→False
                   {Reconciling} (not a role's own Ready), Stalled→False; a
                   generation a run already ended for (a resync, a child's
                   change): nothing
``succeeded``      Reconciling{False, Succeeded}; Stalled→False; Ready{True,
                   Succeeded} unless the role wrote Ready itself
``failed``         Ready{False, Failed, message}; then either Reconciling{True,
                   Pending} (retries go on) or, ``stalled``, Reconciling{False,
                   Stalled} and Stalled{True, <why>, message}
=================  ============================================================

"A new generation" means no run for it has ended yet: the conditions do not already
say Reconciling=False or Stalled=True at g. So periodic resyncs and runs triggered by
children leave a reconciled CR Current, and retries of a stalled one do not flap it
back to InProgress.

A role may own Ready (``k8s_status``, the Memcached role: Ready follows Available). A
Ready condition without ``observedGeneration`` is the role's (``k8s_status`` cannot
write that field; every condition written here carries it): a successful run leaves it
as the role wrote it, and a new generation leaves it too (Reconciling=True reads
InProgress meanwhile; flipping it would make the role's unchanged ``k8s_status`` report a
change on every run). A failed run still sets it False, since Ready=True must mean the
last run for the current generation succeeded; the role's next successful run writes
its own again.

``lastTransitionTime`` moves only when a condition's status changes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from runner.status import conditions as ansible_conditions

Condition = dict[str, Any]

RECONCILING = "Reconciling"
READY = "Ready"
STALLED = "Stalled"

REASON_PENDING = "Pending"
REASON_RUNNING = "Running"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"
REASON_STALLED = "Stalled"
REASON_RECONCILING = "Reconciling"
#: Stalled's reasons: the backoff reached its cap, or the role refused its input.
REASON_BACKOFF_CAPPED = "BackoffCapped"
REASON_INVALID = "Invalid"

#: Every condition type the runtime writes (operator-sdk's, ours, kstatus'): what a
#: server-side apply of status claims; any other type is a role's.
OWN_TYPES = frozenset(
    {
        ansible_conditions.RUNNING,
        ansible_conditions.SUCCESSFUL,
        ansible_conditions.FAILURE,
        ansible_conditions.PAUSED,
        RECONCILING,
        READY,
        STALLED,
    }
)


def new_generation(conds: Sequence[Condition], *, generation: int | None) -> bool:
    """Whether no run for ``generation`` has ended yet, as the conditions tell."""
    reconciling = _find(conds, RECONCILING)
    if (
        reconciling is not None
        and reconciling.get("status") == "False"
        and reconciling.get("observedGeneration") == generation
    ):
        return False
    return not stalled_at(conds, generation=generation)


def stalled_at(conds: Sequence[Condition], *, generation: int | None) -> bool:
    """Stalled=True for ``generation``."""
    stalled = _find(conds, STALLED)
    return (
        stalled is not None
        and stalled.get("status") == "True"
        and stalled.get("observedGeneration") == generation
    )


def waiting(
    conds: Sequence[Condition], *, generation: int | None, now: datetime
) -> list[Condition]:
    """Queued behind ``--max-concurrent-runs``: Reconciling{True, WaitingForSlot} for a new
    generation."""
    out = copy.deepcopy(list(conds))
    if not new_generation(out, generation=generation):
        return out
    message = f"{ansible_conditions.MESSAGE_WAITING}; generation {generation}"
    reason = ansible_conditions.REASON_WAITING
    return _set(out, RECONCILING, "True", reason, message, generation=generation, now=now)


def running(
    conds: Sequence[Condition], *, generation: int | None, now: datetime
) -> list[Condition]:
    """A run starts: for a new generation, Reconciling=True, Ready and Stalled False."""
    out = copy.deepcopy(list(conds))
    if not new_generation(out, generation=generation):
        return out
    message = f"Running reconciliation of generation {generation}"
    out = _set(out, RECONCILING, "True", REASON_RUNNING, message, generation=generation, now=now)
    ready = _find(out, READY)
    role_owned = ready is not None and "observedGeneration" not in ready
    # A role's own Ready is left to the role (Reconciling=True already reads InProgress):
    # flipping it here would make the role's unchanged k8s_status a change on every run.
    if not role_owned and (ready is None or ready.get("status") != "False"):
        text = f"Generation {generation} is being reconciled"
        out = _set(out, READY, "False", REASON_RECONCILING, text, generation=generation, now=now)
    return _clear_stalled(out, generation=generation, now=now)


def succeeded(
    conds: Sequence[Condition], *, generation: int | None, now: datetime
) -> list[Condition]:
    """A run ended without failed tasks."""
    out = copy.deepcopy(list(conds))
    message = f"Last run for generation {generation} succeeded"
    out = _set(out, RECONCILING, "False", REASON_SUCCEEDED, message, generation=generation, now=now)
    out = _clear_stalled(out, generation=generation, now=now)
    ready = _find(out, READY)
    if ready is not None and "observedGeneration" not in ready:
        return out  # the role's own Ready, written by this run (or kept since)
    return _set(out, READY, "True", REASON_SUCCEEDED, message, generation=generation, now=now)


def failed(
    conds: Sequence[Condition],
    *,
    generation: int | None,
    message: str,
    stalled: str | None,
    retry: str,
    now: datetime,
) -> list[Condition]:
    """A run ended with failed tasks (``message``: theirs). ``stalled``: Stalled's reason
    when the runtime gives up on this generation, else None (``retry`` says when the next
    run comes)."""
    out = copy.deepcopy(list(conds))
    out = _set(out, READY, "False", REASON_FAILED, message, generation=generation, now=now)
    if stalled is None:
        pending = f"Last run for generation {generation} failed; {retry}"
        return _set(
            out, RECONCILING, "True", REASON_PENDING, pending, generation=generation, now=now
        )
    gave_up = f"Runs for generation {generation} keep failing; {retry}"
    out = _set(out, RECONCILING, "False", REASON_STALLED, gave_up, generation=generation, now=now)
    return _set(out, STALLED, "True", stalled, message, generation=generation, now=now)


def _clear_stalled(
    conds: list[Condition], *, generation: int | None, now: datetime
) -> list[Condition]:
    stalled = _find(conds, STALLED)
    if stalled is None or stalled.get("status") == "False":
        return conds
    text = f"Generation {generation} is reconciled again"
    return _set(conds, STALLED, "False", REASON_RECONCILING, text, generation=generation, now=now)


def _find(conds: Sequence[Condition], kind: str) -> Condition | None:
    return next((c for c in conds if c.get("type") == kind), None)


def _set(
    conds: list[Condition],
    kind: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    """Write one condition in place (its position kept), Kubernetes' way: the transition
    time moves only with the status; fields a role added survive unless written here."""
    current = _find(conds, kind)
    written: Condition = dict(current or {})
    written.update({"type": kind, "status": status, "reason": reason, "message": message})
    if generation is not None:
        written["observedGeneration"] = generation
    if current is None or current.get("status") != status or "lastTransitionTime" not in current:
        written["lastTransitionTime"] = ansible_conditions.rfc3339(now)
    if current is None:
        return [*conds, written]
    return [written if c is current else c for c in conds]
