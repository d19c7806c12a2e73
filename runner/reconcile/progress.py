"""What a reconcile tells about its run: the CR's conditions and Events, around the run.

Part of one reconcile (watch → queue → reconcile → ansible → **status**). Before the run,
Running=True (and Paused off); after it, Successful or Failure with the run's counts and,
on success, the children record a restart checks (:mod:`runner.reconcile.startup`); a run
that could not be carried out, or a refused annotation, gets Failure with the reason. Only
a watch that manages status gets conditions; Events are recorded either way: a failed run
is a Warning, the first success after failures a Normal ``Recovered``. Unless the watch says
``kstatusConditions: false``, kstatus' Reconciling, Ready and Stalled go with them
(:mod:`runner.status.kstatus`; when a CR is Stalled: :mod:`runner.reconcile.readiness`).
Status is written by server-side apply under the operator's field manager.

Every status write is pinned to the CR's uid (:func:`runner.status.conditions.write`), so
a CR deleted and re-created during a run never gets that run's result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from runner.ansible import launch
from runner.base import errors, logs
from runner.config import entry
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.queue import trigger
from runner.reconcile import readiness, startup
from runner.status import conditions, kstatus, recorder

log = logging.getLogger("runner.reconcile")

Transition = Callable[[list[conditions.Condition]], list[conditions.Condition]]


@dataclass(frozen=True)
class Started:
    """A run about to start: what the Running write returned (None without status)."""

    written: KubeObject | None


class Progress:
    """The conditions and Events of one watch's CRs around their runs."""

    def __init__(
        self,
        *,
        client: Client,
        gvk: GVK,
        events: recorder.Recorder | None,
        children: startup.Children | None,
        failures: readiness.Failures | None = None,
        field_manager: str = conditions.FIELD_MANAGER,
    ) -> None:
        self._client = client
        self._gvk = gvk
        self._recorder = events
        self._children = children  # what each run touched: the record a restart checks
        # Failed runs in a row per CR: when kstatus' Stalled says to stop waiting.
        self._failures = failures or readiness.Failures(base=1.0, cap=300.0)
        self._field_manager = field_manager  # status is applied under it (server-side)
        # "status"; "" once a 404 from /status for an object that is there showed the kind
        # has none (a CRD that gains one later needs a restart of the runner).
        self._subresource = "status"

    def refused(self, obj: KubeObject, *, watch: entry.Watch, message: str) -> None:
        """The CR cannot run as it is (an unparsable annotation): Failure for this generation."""
        if watch.manage_status:
            generation = obj["metadata"].get("generation")
            stalled = watch.kstatus_conditions

            def refuse(c: list[conditions.Condition]) -> list[conditions.Condition]:
                out = conditions.mark_error(c, message=message, now=_now())
                if not stalled:
                    return out
                return kstatus.failed(
                    out,
                    generation=generation,
                    message=message,
                    stalled=kstatus.REASON_INVALID,
                    retry="fix the annotation to run again",
                    now=_now(),
                )

            self.write(obj, refuse, observed=generation)  # this generation was seen, and refused

    def paused(self, obj: KubeObject, *, watch: entry.Watch) -> None:
        """Paused=True: the CR is not reconciled until the annotation goes."""
        if watch.manage_status:
            self.write(obj, lambda c: conditions.mark_paused(c, now=_now()))

    def waiting(self, obj: KubeObject, *, watch: entry.Watch) -> None:
        """Reconciling=True, WaitingForSlot: the run is queued behind --max-concurrent-runs
        (Running comes when it has its slot). Best effort: the wait goes on regardless."""
        if not watch.manage_status:
            return
        generation = obj["metadata"].get("generation")

        def wait(c: list[conditions.Condition]) -> list[conditions.Condition]:
            if watch.kstatus_conditions:
                return kstatus.waiting(c, generation=generation, now=_now())
            return conditions.mark_waiting(c, now=_now())

        try:
            self.write(obj, wait, current=obj)
        except (errors.ReconcileError, kube_errors.KubeError) as exc:
            log.debug("could not write WaitingForSlot", extra={"error": str(exc)})

    def running(
        self, obj: KubeObject, *, watch: entry.Watch, why: trigger.Trigger
    ) -> Started | None:
        """Running=True, and the children record begun; None when the CR was deleted (or
        re-created) before its run, which must then not run."""
        uid = str(obj["metadata"].get("uid", ""))
        if not watch.manage_status:
            if self._children is not None:  # no record kept, but pruning reads what it saw
                self._children.begin(uid)
            return Started(written=None)
        generation = obj["metadata"].get("generation")
        on = watch.kstatus_conditions

        def start(c: list[conditions.Condition]) -> list[conditions.Condition]:
            c = conditions.mark_resumed(c, now=_now())
            if on:  # before mark_running, which would drop a slot wait it turns into Running
                c = kstatus.running(c, generation=generation, now=_now())
            return conditions.mark_running(c, now=_now(), why=why.describe())

        # From the cached copy: saves a read; a stale copy costs a 409 and a re-read.
        written = self.write(obj, start, current=obj)
        if written is None:
            return None
        if self._children is not None:  # the record lives in status
            self._children.begin(uid)
        return Started(written=written)

    def finished(
        self,
        obj: KubeObject,
        result: launch.RunResult,
        *,
        watch: entry.Watch,
        started: Started,
        finalizing: bool,
        seen: startup.Seen | None = None,
    ) -> None:
        """Successful or Failure with the run's counts (none for a finalizer run that
        succeeded: the CR goes), then the run's Event."""
        meta = obj["metadata"]
        if watch.manage_status and not (finalizing and not result.failed):
            transition = _done(result)
            if watch.kstatus_conditions and not finalizing:  # deleting: kstatus' Terminating
                transition = _with_kstatus(self._failures, transition, obj, result=result)
            # From what the Running write returned: unless the role wrote status
            # meanwhile (then a 409 and a re-read), no read is needed.
            self.write(
                obj,
                transition,
                observed=meta.get("generation"),
                current=started.written,
                fields=self._children_fields(meta, result=result, finalizing=finalizing, seen=seen),
            )
        if self._recorder is None or finalizing:
            return
        if result.failed:
            self._recorder.record(
                obj, warning=True, reason=recorder.REASON_FAILED, message=failure_message(result)
            )
        elif recorder.failing(obj):
            self._recorder.record(
                obj,
                warning=False,
                reason=recorder.REASON_RECOVERED,
                message="Reconciled again after failing",
            )

    def run_step_failed(
        self, obj: KubeObject, exc: Exception, *, watch: entry.Watch, log: logs.BoundLogger
    ) -> str:
        """Report a run that could not be carried out: Failure (Running off), a Warning
        Event; returns the message."""
        detail = str(exc) if isinstance(exc, errors.ReconcileError) else _describe(exc)
        message = f"Ansible could not run: {detail}"
        log.error("Ansible could not run", extra={"error": detail})
        if watch.manage_status:

            def error(c: list[conditions.Condition]) -> list[conditions.Condition]:
                return conditions.mark_error(c, message=message, now=_now())

            transition: Transition = error
            if watch.kstatus_conditions:
                transition = _with_kstatus(self._failures, error, obj, result=None, message=message)
            try:
                self.write(obj, transition, observed=obj["metadata"].get("generation"))
            except (errors.ReconcileError, kube_errors.KubeError) as write_error:
                log.warning("could not write Failure", extra={"error": str(write_error)})
        if self._recorder is not None:
            self._recorder.record(obj, warning=True, reason=recorder.REASON_FAILED, message=message)
        return message

    def write(
        self,
        obj: KubeObject,
        transition: Transition,
        *,
        observed: int | None = None,
        current: KubeObject | None = None,
        fields: Mapping[str, object] | None = None,
    ) -> KubeObject | None:
        """One conditions update of ``obj``'s status; None when the CR is gone (or another).

        A kind without the status subresource gets its status through the object itself,
        said once in the log: known from the first 404 of ``/status`` for an object that
        is there (:func:`runner.status.conditions.write` reads it again to tell)."""
        meta = obj["metadata"]

        def once(subresource: str) -> KubeObject | None:
            return conditions.write(
                self._client,
                gvk=self._gvk,
                namespace=meta.get("namespace") or "",
                name=meta["name"],
                conditions_update=transition,
                observed_generation=observed,
                current=current,
                uid=meta.get("uid"),
                fields=fields,
                subresource=subresource,
                seen=obj,
                field_manager=self._field_manager,
                own_types=kstatus.OWN_TYPES,
            )

        try:
            return once(self._subresource)
        except errors.StatusSubresourceMissing:
            if not self._subresource:
                raise
            self._subresource = ""
            log.warning(
                "no status subresource: status is written through the object, and each "
                "write bumps its generation (reconciles are not triggered by it)",
                extra={"gvk": str(self._gvk)},
            )
            return once(self._subresource)

    def touched(self, obj: KubeObject) -> startup.Seen | None:
        """What the run of ``obj`` that just ended read or wrote through the proxy (taken
        once; None: no record is kept)."""
        if self._children is None:
            return None
        return self._children.take(str(obj["metadata"].get("uid", "")))

    def _children_fields(
        self,
        meta: Mapping[str, object],
        *,
        result: launch.RunResult,
        finalizing: bool,
        seen: startup.Seen | None,
    ) -> dict[str, object] | None:
        """``status.reconciledChildren`` for a successful run (reconcile.startup), else None."""
        if self._children is None:
            return None
        if seen is None:
            seen = self._children.take(str(meta.get("uid", "")))
        if result.failed or finalizing:
            return None
        # None (too many children to record) removes an older record: a merge patch's null.
        return {startup.STATUS_FIELD: startup.record(seen)}


def _with_kstatus(
    failures: readiness.Failures,
    transition: Transition,
    obj: KubeObject,
    *,
    result: launch.RunResult | None,
    message: str = "",
) -> Transition:
    """``transition``, then kstatus' conditions for how the run ended (``result``
    None: it could not be carried out)."""
    meta = obj["metadata"]
    uid, generation = str(meta.get("uid", "")), meta.get("generation")
    if result is not None and not result.failed:
        failures.succeeded(uid)
        return lambda c: kstatus.succeeded(transition(c), generation=generation, now=_now())
    failed = result.failed_tasks if result is not None else ()
    stalled, retry = readiness.verdict(failures, uid=uid, generation=generation, failed=failed)
    text = failure_message(result) if result is not None else message
    return lambda c: kstatus.failed(
        transition(c),
        generation=generation,
        message=text,
        stalled=stalled,
        retry=retry,
        now=_now(),
    )


def failure_message(result: launch.RunResult) -> str:
    """operator-sdk's Failure message: each failed task's message, one per line; we also
    name the task so the status says where it broke."""
    if not result.failed_tasks:
        return errors.UNKNOWN_FAILURE
    return "\n".join(f"{task.task}: {task.message}" for task in result.failed_tasks)


def _done(result: launch.RunResult) -> Transition:
    """The final condition transition for a finished run."""
    summary = conditions.AnsibleResult(
        ok=result.ok,
        changed=result.changed,
        skipped=result.skipped,
        failures=result.failures,
        completion=result.completion,
    )
    if result.failed:
        message = failure_message(result)
        return lambda c: conditions.mark_failed(c, result=summary, message=message, now=_now())
    return lambda c: conditions.mark_successful(c, result=summary, now=_now())


def _describe(exc: Exception) -> str:
    """An unexpected exception, for a status message: its type and text."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _now() -> datetime:
    return datetime.now(UTC)
