"""The Ansible run of one reconcile: planned, started within the run cap, recorded, logged.

Part of one reconcile (watch → queue → reconcile → **ansible** → status). The run's spec
comes from the shared run plan (:class:`runner.ansible.plan.Builder`): the watch's role or
playbook (the finalizer's when finalizing) over the CR's extra vars, in the CR's private
data dir. Around the run itself: one of ``--max-concurrent-runs``' slots; with an RBAC
record, the tasks it enters are noted (so a denied request names its task) and a failed
run's Failure names the rules it lacked; the run metric; the trigger saved beside its
artifacts (``playbook-operator runs``); and ansible-operator's log lines and PLAY RECAP.
CR data kept out of Ansible's variables is reported once per CR generation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from runner.ansible import events as ansible_events
from runner.ansible import extravars, launch, plan
from runner.ansible import spec as ansible_spec
from runner.base import logs
from runner.config import entry, sections
from runner.kube.types import GVK, KubeObject
from runner.queue import trigger
from runner.rbac import record as rbac_record
from runner.status import recorder

_MAX_REMEMBERED = 10_000  # CRs whose withheld data was reported, per watch


class RunObserver(Protocol):
    def __call__(self, gvk: GVK, *, failed: bool, seconds: float, trigger: str) -> None: ...


class AnsibleStep:
    """Runs the Ansible of one watch's CRs, one run per call; safe from many workers."""

    def __init__(
        self,
        *,
        gvk: GVK,
        builder: plan.Builder,
        reconcile: sections.ReconcileSettings,
        runner: launch.AnsibleRunner,
        events: recorder.Recorder | None = None,
        on_run: RunObserver | None = None,
        rbac: rbac_record.Record | None = None,
        run_slots: threading.Semaphore | None = None,
    ) -> None:
        self._gvk = gvk
        self._builder = builder
        self._reconcile = reconcile
        self._runner = runner
        self._recorder = events
        self.on_run = on_run
        self._rbac = rbac  # the task each run is in, for the denials the proxy records
        self._run_slots = run_slots  # --max-concurrent-runs, shared by every kind
        self._withheld_reported: dict[str, object] = {}  # uid → generation already reported

    def run(
        self,
        obj: KubeObject,
        *,
        watch: entry.Watch,
        log: logs.BoundLogger,
        finalizing: bool,
        verbosity: int,
        artifacts: int,
        why: trigger.Trigger,
        ident: str,
    ) -> launch.RunResult:
        """Run the watch's content (the finalizer's when ``finalizing``) over ``obj``."""
        meta = obj["metadata"]
        content = plan.Content.of(watch)
        finalizer_vars: Mapping[str, object] | None = None
        if finalizing and watch.finalizer is not None:
            finalizer_vars = watch.finalizer.vars
            if watch.finalizer.role is not None or watch.finalizer.playbook is not None:
                content = plan.Content(role=watch.finalizer.role, playbook=watch.finalizer.playbook)
        built = self._builder.variables(obj, watch=watch, finalizer_vars=finalizer_vars)
        if not built.clean:
            self._report_withheld(obj, built, log=log)
        with self._builder.open(
            owner=obj,
            content=content,
            variables=built.variables,
            private_data_dir=self.private_dir(meta.get("namespace") or "", meta["name"]),
            verbosity=verbosity,
            ident=ident,
            rotate_artifacts=artifacts,
            timeout=self._timeout(watch),
        ) as spec:
            result = self._run_recorded(spec, obj=obj, log=log)
        if self.on_run is not None:
            self.on_run(
                self._gvk, failed=result.failed, seconds=result.duration, trigger=str(why.kind)
            )
        _save_trigger(result, why=why, log=log)
        return result

    def report(
        self, result: launch.RunResult, *, meta: Mapping[str, str], log: logs.BoundLogger
    ) -> None:
        """Log and print a finished run as ansible-operator does, for the habits and alerts
        built on its output: ``Ansible-runner exited successfully``, or an error line whose
        message is Ansible's output and whose ``error`` is the exit status; then, on
        standard output, the PLAY RECAP, and with ``ANSIBLE_DEBUG_LOGS`` the whole output.

        The error line carries the failed tasks' messages and the PLAY RECAP, not
        Ansible's whole output as ansible-operator's does: at the default verbosity
        that holds every task's result, which may be anything a role read."""
        try:
            output = (result.artifact_dir / "stdout").read_text(encoding="utf-8", errors="replace")
        except OSError:
            output = ""
        if result.rc == 0:
            log.info("Ansible-runner exited successfully")
        else:
            error = f"exit status {result.rc}" if result.rc is not None else result.status
            log.error(result.report(), extra={"error": error})
        about = f"{self._gvk}, {meta['name']}/{meta.get('namespace') or ''}"
        recap = logs.play_recap(output)
        if recap:
            logs.print_block(title=f"Ansible Task Status Event StdOut ({about})", text=recap)
        if self._builder.ansible.debug_logs and output.strip():
            logs.print_block(title=f"Ansible Debug Result ({about})", text=output.strip())

    def private_dir(self, namespace: str, name: str) -> Path:
        """The CR's private data dir (:func:`runner.ansible.plan.private_dir`)."""
        return plan.private_dir(
            self._builder.ansible.runner_dir, gvk=self._gvk, namespace=namespace, name=name
        )

    def forget(self, namespace: str, name: str, *, log: logs.BoundLogger) -> None:
        """Remove a gone CR's inputs and artifacts: nothing will read them again, and a CR
        re-created under the name starts afresh (runs of one key never overlap)."""
        if name in ("", ".", "..") or "/" in name or namespace in (".", "..") or "/" in namespace:
            return  # never a path outside the runner dir (such names never reach a run)
        path = self.private_dir(namespace, name)
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            log.debug("removed the private data dir", extra={"path": str(path)})

    def _run_recorded(
        self, spec: ansible_spec.RunSpec, *, obj: KubeObject, log: logs.BoundLogger
    ) -> launch.RunResult:
        """Run ``spec``; with an RBAC record, the tasks it enters are noted (so a denied
        request names its task) and a failed run's Failure names the rules it lacked."""
        if self._rbac is None:
            return self._runner.run(spec, log=log)
        record, meta = self._rbac, obj["metadata"]
        run = (self._gvk, meta.get("namespace") or "", meta["name"])

        also = spec.on_event

        def on_event(event: Mapping[str, Any]) -> None:
            data = event.get("event_data")
            if str(event.get("event", "")).endswith("task_start") and isinstance(data, dict):
                record.task_started(run, str(data.get("task") or data.get("name") or ""))
            if also is not None:
                also(event)

        record.run_started(run)
        try:
            result = self._runner.run(dataclasses.replace(spec, on_event=on_event), log=log)
        finally:
            denials = record.run_ended(run)
        if not result.failed or not denials:
            return result
        return dataclasses.replace(result, failed_tasks=rbac_failures(result.failed_tasks, denials))

    def _report_withheld(
        self, obj: KubeObject, built: extravars.ExtraVars, *, log: logs.BoundLogger
    ) -> None:
        """Say once per CR generation which CR data was kept out of Ansible's variables."""
        meta = obj["metadata"]
        seen = (meta.get("uid", ""), meta.get("generation"))
        if self._withheld_reported.get(seen[0]) == seen[1]:
            return
        self._withheld_reported[seen[0]] = seen[1]
        while len(self._withheld_reported) > _MAX_REMEMBERED:
            self._withheld_reported.pop(next(iter(self._withheld_reported)))
        message = withheld_message(built, object_key=extravars.object_key(self._gvk))
        log.warning(
            "CR data withheld from Ansible variables",
            extra={
                "withheld_fields": list(built.withheld_fields),
                "dropped_keys": list(built.dropped_keys),
            },
        )
        if self._recorder is not None:
            self._recorder.record(
                obj, warning=True, reason=recorder.REASON_WITHHELD, message=message
            )

    @contextlib.contextmanager
    def slot(self, *, log: logs.BoundLogger, waiting: Callable[[bool], None]) -> Iterator[None]:
        """One of ``--max-concurrent-runs``' slots, held by the caller around the Running
        write and the run. When none is free, ``waiting(True)`` before the wait and
        ``waiting(False)`` once the slot is taken."""
        if self._run_slots is None:
            yield
            return
        if not self._run_slots.acquire(blocking=False):
            log.debug("waiting for a run slot (--max-concurrent-runs)")
            waiting(True)
            self._run_slots.acquire()
            waiting(False)
        try:
            yield
        finally:
            self._run_slots.release()

    def _timeout(self, watch: entry.Watch) -> float | None:
        """Seconds the run may take: the watch's reconcileTimeout, else the flag (0: none)."""
        seconds = watch.reconcile_timeout or self._reconcile.reconcile_timeout
        return seconds if seconds > 0 else None


def withheld_message(built: extravars.ExtraVars, *, object_key: str) -> str:
    """The Warning Event's text: which CR data Ansible did not get, and where it still is."""
    parts = []
    if built.withheld_fields:
        names = ", ".join(built.withheld_fields)
        parts.append(
            f"spec fields not passed as Ansible variables: {names} "
            f"(they name Ansible's own or the runner's variables; roles read them "
            f"from {object_key}_spec)"
        )
    if built.dropped_keys:
        parts.append(
            "keys Ansible would decode as typed values were removed: "
            + ", ".join(built.dropped_keys)
        )
    return "; ".join(parts)


def rbac_failures(
    failed: tuple[ansible_events.FailedTask, ...], denials: list[rbac_record.Denial]
) -> tuple[ansible_events.FailedTask, ...]:
    """Each failed task's message followed by the rules its denied requests lacked
    (``needs: apps deployments patch in namespace ns1``); denials of no failed task
    go to the last one."""
    by_task = {task.task for task in failed}
    stray = [d for d in denials if d.task not in by_task]
    out = []
    for index, task in enumerate(failed):
        mine = [d for d in denials if d.task == task.task]
        if index == len(failed) - 1:
            mine += stray
        needs = rbac_record.needs_message(mine) if mine else ""
        message = f"{task.message}; {needs}".lstrip("; ") if needs else task.message
        out.append(dataclasses.replace(task, message=message))
    return tuple(out)


def _save_trigger(result: launch.RunResult, *, why: trigger.Trigger, log: logs.BoundLogger) -> None:
    """Record beside the run's artifacts why it ran and how it went (``playbook-operator runs``)."""
    try:
        trigger.save(
            result.artifact_dir,
            why,
            started=datetime.now(UTC).timestamp() - result.duration,
            seconds=result.duration,
            result="failed" if result.failed else "succeeded",
            failed_task=result.failed_tasks[0].task if result.failed_tasks else None,
        )
    except OSError as exc:  # the run's outcome stands; only its explanation is lost
        log.warning("could not record the run's trigger", extra={"error": str(exc)})
