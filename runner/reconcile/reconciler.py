"""One reconcile: read the custom resource, run its role or playbook, report status.

Level-based: a :class:`Request` names the object and nothing else; everything
the reconcile needs is read fresh (from the informer cache, else the API).

    read CR ─┬─ gone ─────────────────────────────────────────────→ done
             ├─ deleting, our finalizer on it → finalizer run → remove finalizer
             └─ live → add finalizer (if configured) → Running → Ansible
                                                  → Successful | Failure

A failed Ansible run raises :class:`ReconcileFailed` after the Failure condition
is written, so the controller retries it with backoff; so does a run that could
not start at all (or whose run step raised anything): Running never stays True.
Status writes are pinned to the CR's uid, so a CR deleted and re-created during
a run never gets that run's result. Once a CR is gone (or its finalizer ran),
its private data dir is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from runner.ansible import extravars, launch
from runner.base import errors, logs
from runner.config import options, watches
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, ObjectKey, make_key, split_key
from runner.queue import trigger
from runner.rbac import record as rbac_record
from runner.reconcile import overrides, pause, startup
from runner.status import conditions, recorder

log = logging.getLogger("runner.reconcile")
_MAX_REMEMBERED = 10_000  # CRs whose withheld data was reported, per watch


@dataclass(frozen=True)
class Request:
    """Names one object; never carries the event that caused it."""

    gvk: GVK
    namespace: str
    name: str

    @property
    def key(self) -> ObjectKey:
        return make_key(namespace=self.namespace, name=self.name)

    @classmethod
    def of(cls, gvk: GVK, key: ObjectKey) -> Request:
        namespace, name = split_key(key)
        return cls(gvk=gvk, namespace=namespace, name=name)


@dataclass(frozen=True)
class Result:
    """``requeue_after``: seconds until the object is reconciled again (None: only on events).
    ``requested``: the role asked for it with the ``requeue_after`` module."""

    requeue_after: float | None = None
    requested: bool = False


class ReconcileFailed(errors.ReconcileError):
    """The Ansible run had failed tasks; the Failure condition names them."""


class RunEnvironment(Protocol):
    """Gives each Ansible run the environment its modules use to reach the API server.

    The owner-injecting proxy implements this with a per-run kubeconfig that
    identifies ``owner``; without it, the operator's own kubeconfig is used.
    """

    def for_owner(
        self, owner: KubeObject
    ) -> contextlib.AbstractContextManager[Mapping[str, str]]: ...


class StaticEnvironment:
    """The operator's kubeconfig, unchanged, for every run."""

    def __init__(self, kubeconfig: str | None) -> None:
        self._env = (
            {"K8S_AUTH_KUBECONFIG": kubeconfig, "KUBECONFIG": kubeconfig} if kubeconfig else {}
        )

    @contextlib.contextmanager
    def for_owner(self, owner: KubeObject) -> Iterator[Mapping[str, str]]:
        yield self._env


Cache = Callable[[ObjectKey], KubeObject | None]
Transition = Callable[[list[conditions.Condition]], list[conditions.Condition]]


class RunObserver(Protocol):
    def __call__(self, gvk: GVK, *, failed: bool, seconds: float, trigger: str) -> None: ...


class Reconciler:
    """Reconciles the custom resources of one watch."""

    def __init__(
        self,
        *,
        watch: watches.Watch,
        settings: options.Settings,
        client: Client,
        runner: launch.AnsibleRunner,
        environment: RunEnvironment,
        cache: Cache | None = None,
        on_run: RunObserver | None = None,
        events: recorder.Recorder | None = None,
        run_env: Mapping[str, str] | None = None,
        rbac: rbac_record.Record | None = None,
        children: startup.Children | None = None,
        run_slots: threading.Semaphore | None = None,
    ) -> None:
        self._children = children  # what each run touched: the record a restart checks
        self._run_slots = run_slots  # --max-concurrent-runs, shared by every kind
        self.watch = watch
        self._rbac = rbac  # the task each run is in, for the denials the proxy records
        self.gvk = watch.gvk
        self._settings = settings
        self._client = client
        self._runner = runner
        self._environment = environment
        self._cache = cache
        self._on_run = on_run
        self._recorder = events
        self._run_env = run_env if run_env is not None else {}  # shared: filled at start-up
        self._withheld_reported: dict[str, object] = {}  # uid → generation already reported
        self._refused_reported: dict[tuple[str, str], str] = {}  # (uid, annotation) → value

    # -- entry point ------------------------------------------------------

    def reconcile(self, request: Request, *, why: trigger.Trigger = trigger.OTHER) -> Result:
        """``why`` explains the run (logs, Running message, artifacts, metric); never steers it."""
        rlog = logs.bind(
            log,
            reconcile_id=uuid.uuid4().hex[:12],
            kind=self.gvk.kind,
            namespace=request.namespace,
            name=request.name,
            gvk=str(self.gvk),  # ansible-operator's field: "group/version, Kind=Kind"
            trigger=why.describe(),
        )
        obj = self._read(request)
        if obj is None:
            rlog.debug("object gone; nothing to do")
            self._remove_private_dir(request.namespace, request.name, log=rlog)
            return Result()
        meta = obj.get("metadata") or {}
        for part in (meta.get("namespace") or "", meta.get("name") or ""):
            # Name and namespace become directories of the private data dir. The API
            # server never admits these; refuse them here too rather than trust that.
            if part in (".", "..") or "/" in part or "\0" in part:
                raise errors.ReconcileError(f"refusing a name unfit for a path: {part!r}")
        finalizer = self.watch.finalizer
        present = finalizer is not None and finalizer.name in (meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            if not present:
                return Result()  # not ours to hold; garbage collection does the rest
            return self._converge(obj, log=rlog, finalizing=True, why=why)
        if pause.paused(obj):  # after the deletion branch: a paused CR's finalizer still runs
            return self._pause(obj, log=rlog)
        if finalizer is not None and not present:
            obj = self._set_finalizer(obj, add=True)
        return self._converge(obj, log=rlog, finalizing=False, why=why)

    # -- steps ------------------------------------------------------------

    def _read(self, request: Request) -> KubeObject | None:
        if self._cache is not None:
            cached = self._cache(request.key)
            if cached is not None:
                return cached
        try:
            return self._client.get(
                self.gvk, name=request.name, namespace=request.namespace or None
            )
        except kube_errors.NotFoundError:
            return None

    def _set_finalizer(self, obj: KubeObject, *, add: bool) -> KubeObject:
        assert self.watch.finalizer is not None
        name = self.watch.finalizer.name
        meta = obj["metadata"]
        current = list(meta.get("finalizers") or [])
        wanted = [*current, name] if add else [f for f in current if f != name]
        # resourceVersion makes this a compare-and-swap: a concurrent writer's change
        # to the list is not lost; the conflict surfaces as a retried reconcile.
        return self._client.patch(
            self.gvk,
            name=meta["name"],
            namespace=meta.get("namespace"),
            body={"metadata": {"finalizers": wanted, "resourceVersion": meta["resourceVersion"]}},
        )

    def _converge(
        self, obj: KubeObject, *, log: logs.BoundLogger, finalizing: bool, why: trigger.Trigger
    ) -> Result:
        meta = obj["metadata"]
        annotations = meta.get("annotations") or {}
        manage = self.watch.manage_status
        try:
            period = self._reconcile_period(obj, annotations, log=log)
        except ValueError as exc:
            message = f"Unable to parse reconcile period annotation: {exc}"
            if manage:
                self._write_status(
                    obj,
                    lambda c: conditions.mark_error(c, message=message, now=_now()),
                    observed=meta.get("generation"),  # this generation was seen, and refused
                )
            raise errors.ReconcileError(message) from exc

        verbosity = self._bounded(
            obj,
            overrides.verbosity(
                annotations.get(options.VERBOSITY_ANNOTATION),
                default=self._settings.verbosity_for(self.gvk),
            ),
            annotation=options.VERBOSITY_ANNOTATION,
            log=log,
        )
        artifacts = self._bounded(
            obj,
            overrides.max_artifacts(
                annotations.get(options.MAX_ARTIFACTS_ANNOTATION),
                default=self.watch.max_runner_artifacts,
            ),
            annotation=options.MAX_ARTIFACTS_ANNOTATION,
            log=log,
        )
        written: KubeObject | None = None
        if manage:
            # From the cached copy: saves a read; a stale copy costs a 409 and a re-read.
            written = self._write_status(
                obj,
                lambda c: conditions.mark_running(
                    conditions.mark_resumed(c, now=_now()), now=_now(), why=why.describe()
                ),
                current=obj,
            )
            if written is None:
                log.info("object deleted (or re-created) before its run; not running it")
                return Result()
        if self._children is not None and manage:  # the record lives in status
            self._children.begin(str(meta.get("uid", "")))
        ident = uuid.uuid4().hex[:16]  # the artifacts' dir; ansible-operator logs it as job
        log = logs.bind(log, job=ident)
        try:
            result = self._run_ansible(
                obj,
                ident=ident,
                log=log,
                finalizing=finalizing,
                verbosity=verbosity,
                artifacts=artifacts,
                why=why,
            )
        except Exception as exc:
            # Whatever stops the run step (a launch error, a full disk, a bug) must not
            # leave Running=True behind: Failure with the reason, then backoff.
            raise errors.ReconcileError(self._run_step_failed(obj, exc, log=log)) from exc
        self._report_run(result, meta=meta, log=log)

        if manage and not (finalizing and not result.failed):
            # From what the Running write returned: unless the role wrote status
            # meanwhile (then a 409 and a re-read), no read is needed.
            self._write_status(
                obj,
                _done(result),
                observed=meta.get("generation"),
                current=written,
                fields=self._children_fields(meta, result=result, finalizing=finalizing),
            )

        if self._recorder is not None and not finalizing:
            if result.failed:
                self._recorder.record(
                    obj,
                    warning=True,
                    reason=recorder.REASON_FAILED,
                    message=failure_message(result),
                )
            elif recorder.failing(obj):
                self._recorder.record(
                    obj,
                    warning=False,
                    reason=recorder.REASON_RECOVERED,
                    message="Reconciled again after failing",
                )
        if result.failed:
            raise ReconcileFailed(failure_message(result))
        if finalizing:
            with contextlib.suppress(kube_errors.NotFoundError):
                live = self._client.get(
                    self.gvk, name=meta["name"], namespace=meta.get("namespace")
                )
                if live["metadata"].get("uid") == meta.get("uid"):
                    self._set_finalizer(live, add=False)
            log.info("finalizer ran; removed it")
            self._remove_private_dir(meta.get("namespace") or "", meta["name"], log=log)
            return Result()
        if result.requeue_after is not None:
            return Result(requeue_after=result.requeue_after, requested=True)
        return Result(requeue_after=period)

    def _run_ansible(
        self,
        obj: KubeObject,
        *,
        log: logs.BoundLogger,
        finalizing: bool,
        verbosity: int,
        artifacts: int,
        why: trigger.Trigger,
        ident: str,
    ) -> launch.RunResult:
        meta = obj["metadata"]
        watch = self.watch
        target_role, target_playbook = watch.role, watch.playbook
        finalizer_vars: Mapping[str, object] | None = None
        if finalizing and watch.finalizer is not None:
            finalizer_vars = watch.finalizer.vars
            if watch.finalizer.role is not None or watch.finalizer.playbook is not None:
                target_role, target_playbook = watch.finalizer.role, watch.finalizer.playbook
        built = extravars.build(
            obj=obj,
            snake_case=watch.snake_case_parameters,
            mark_unsafe=watch.mark_unsafe,
            watch_vars=watch.vars,
            finalizer_vars=finalizer_vars,
            allow_ansible_vars=watch.allow_ansible_vars_from_spec,
        )
        if not built.clean:
            self._report_withheld(obj, built, log=log)
        variables = built.variables
        with self._environment.for_owner(obj) as env:
            spec = launch.RunSpec(
                ident=ident,
                private_data_dir=self._private_dir(meta),
                playbook=target_playbook,
                role=target_role.name if target_role else None,
                roles_path=tuple(
                    p
                    for p in (
                        [target_role.roles_path] if target_role and target_role.roles_path else []
                    )
                )
                + tuple(Path(p) for p in self._settings.ansible_roles_path),
                extravars=variables,
                envvars={**self._run_env, **env},
                verbosity=verbosity,
                cmdline=self._settings.ansible_args,
                rotate_artifacts=artifacts,
                log_events=self._settings.ansible_log_events,
                collections_path=tuple(Path(p) for p in self._settings.ansible_collections_path),
                timeout=self._timeout(),
            )
            with self._run_slot(log=log):
                result = self._run_recorded(spec, obj=obj, log=log)
        if self._on_run is not None:
            self._on_run(
                self.gvk, failed=result.failed, seconds=result.duration, trigger=str(why.kind)
            )
        _save_trigger(result, why=why, log=log)
        return result

    def _run_recorded(
        self, spec: launch.RunSpec, *, obj: KubeObject, log: logs.BoundLogger
    ) -> launch.RunResult:
        """Run ``spec``; with an RBAC record, the tasks it enters are noted (so a denied
        request names its task) and a failed run's Failure names the rules it lacked."""
        if self._rbac is None:
            return self._runner.run(spec, log=log)
        record, meta = self._rbac, obj["metadata"]
        run = (self.gvk, meta.get("namespace") or "", meta["name"])

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

    # -- helpers ----------------------------------------------------------

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
        message = withheld_message(built, object_key=extravars.object_key(self.gvk))
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

    def _write_status(
        self,
        obj: KubeObject,
        transition: Transition,
        *,
        observed: int | None = None,
        current: KubeObject | None = None,
        fields: Mapping[str, object] | None = None,
    ) -> KubeObject | None:
        meta = obj["metadata"]
        return conditions.write(
            self._client,
            gvk=self.gvk,
            namespace=meta.get("namespace") or "",
            name=meta["name"],
            conditions_update=transition,
            observed_generation=observed,
            current=current,
            uid=meta.get("uid"),
            fields=fields,
        )

    def _pause(self, obj: KubeObject, *, log: logs.BoundLogger) -> Result:
        """A paused CR: no run, no finalizer added; Paused=True says why (reconcile.pause)."""
        log.info("paused; not reconciling", extra={"annotation": options.PAUSED_ANNOTATION})
        if self.watch.manage_status:
            self._write_status(obj, lambda c: conditions.mark_paused(c, now=_now()))
        return Result()

    @contextlib.contextmanager
    def _run_slot(self, *, log: logs.BoundLogger) -> Iterator[None]:
        """One of --max-concurrent-runs' slots for the length of the Ansible run."""
        if self._run_slots is None:
            yield
            return
        if not self._run_slots.acquire(blocking=False):
            log.debug("waiting for a run slot (--max-concurrent-runs)")
            self._run_slots.acquire()
        try:
            yield
        finally:
            self._run_slots.release()

    def _children_fields(
        self, meta: Mapping[str, object], *, result: launch.RunResult, finalizing: bool
    ) -> dict[str, object] | None:
        """``status.reconciledChildren`` for a successful run (reconcile.startup), else None."""
        if self._children is None:
            return None
        seen = self._children.take(str(meta.get("uid", "")))
        if result.failed or finalizing:
            return None
        # None (too many children to record) removes an older record: a merge patch's null.
        return {startup.STATUS_FIELD: startup.record(seen)}

    def _private_dir(self, meta: Mapping[str, str]) -> Path:
        """ansible-operator's layout, ``<runner-dir>/<group>/<version>/<kind>/<namespace>/<name>``,
        where an empty group (core kinds) or namespace (cluster-scoped objects) is no
        directory at all: a Secret's is ``<runner-dir>/v1/Secret/<namespace>/<name>``."""
        gvk = self.gvk
        parts = (gvk.group, gvk.version, gvk.kind, meta.get("namespace") or "", meta["name"])
        return self._settings.runner_dir.joinpath(*(part for part in parts if part))

    def _report_run(
        self,
        result: launch.RunResult,
        *,
        meta: Mapping[str, str],
        log: logs.BoundLogger,
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
        about = f"{self.gvk}, {meta['name']}/{meta.get('namespace') or ''}"
        recap = logs.play_recap(output)
        if recap:
            logs.print_block(title=f"Ansible Task Status Event StdOut ({about})", text=recap)
        if self._settings.ansible_debug_logs and output.strip():
            logs.print_block(title=f"Ansible Debug Result ({about})", text=output.strip())

    def _reconcile_period(
        self, obj: KubeObject, annotations: Mapping[str, str], *, log: logs.BoundLogger
    ) -> float:
        # operator-sdk: only a non-zero watches.yaml period overrides the flag.
        default = self.watch.reconcile_period or self._settings.reconcile_period
        text = annotations.get(options.RECONCILE_PERIOD_ANNOTATION)
        bounded = overrides.reconcile_period(text, default=default)
        return self._bounded(obj, bounded, annotation=options.RECONCILE_PERIOD_ANNOTATION, log=log)

    def _bounded(
        self,
        obj: KubeObject,
        bounded: overrides.Bounded[overrides.T],
        *,
        annotation: str,
        log: logs.BoundLogger,
    ) -> overrides.T:
        """The value to use; a refused or clamped annotation is reported once per value
        (a Warning Event, a log line), not on every run."""
        meta = obj["metadata"]
        key = (str(meta.get("uid", "")), annotation)
        if bounded.problem is None:
            self._refused_reported.pop(key, None)
            return bounded.value
        value = str((meta.get("annotations") or {}).get(annotation))
        if self._refused_reported.get(key) != value:
            self._refused_reported[key] = value
            while len(self._refused_reported) > _MAX_REMEMBERED:
                self._refused_reported.pop(next(iter(self._refused_reported)))
            log.warning("annotation out of bounds", extra={"problem": bounded.problem})
            if self._recorder is not None:
                self._recorder.record(
                    obj,
                    warning=True,
                    reason=recorder.REASON_ANNOTATION,
                    message=bounded.problem,
                )
        return bounded.value

    def _timeout(self) -> float | None:
        """Seconds the run may take: the watch's reconcileTimeout, else the flag (0: none)."""
        seconds = self.watch.reconcile_timeout or self._settings.reconcile_timeout
        return seconds if seconds > 0 else None

    def _run_step_failed(self, obj: KubeObject, exc: Exception, *, log: logs.BoundLogger) -> str:
        """Report a run that could not be carried out: Failure (Running off), a Warning
        Event; returns the message."""
        detail = str(exc) if isinstance(exc, errors.ReconcileError) else _describe(exc)
        message = f"Ansible could not run: {detail}"
        log.error("Ansible could not run", extra={"error": detail})
        if self.watch.manage_status:
            try:
                self._write_status(
                    obj,
                    lambda c: conditions.mark_error(c, message=message, now=_now()),
                    observed=obj["metadata"].get("generation"),
                )
            except (errors.ReconcileError, kube_errors.KubeError) as write_error:
                log.warning("could not write Failure", extra={"error": str(write_error)})
        if self._recorder is not None:
            self._recorder.record(obj, warning=True, reason=recorder.REASON_FAILED, message=message)
        return message

    def _remove_private_dir(self, namespace: str, name: str, *, log: logs.BoundLogger) -> None:
        """A gone CR's inputs and artifacts: nothing will read them again, and a CR
        re-created under the name starts afresh (runs of one key never overlap)."""
        if name in ("", ".", "..") or "/" in name or namespace in (".", "..") or "/" in namespace:
            return  # never a path outside the runner dir (such names never reach a run)
        path = self._private_dir({"namespace": namespace, "name": name})
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            log.debug("removed the private data dir", extra={"path": str(path)})


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


def failure_message(result: launch.RunResult) -> str:
    """operator-sdk's Failure message: each failed task's message, one per line; we also
    name the task so the status says where it broke."""
    if not result.failed_tasks:
        return "unknown playbook failure"
    return "\n".join(f"{task.task}: {task.message}" for task in result.failed_tasks)


def rbac_failures(
    failed: tuple[launch.FailedTask, ...], denials: list[rbac_record.Denial]
) -> tuple[launch.FailedTask, ...]:
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


def _describe(exc: Exception) -> str:
    """An unexpected exception, for a status message: its type and text."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _now() -> datetime:
    return datetime.now(UTC)
