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

The :class:`Reconciler` walks that flow; its collaborators do the steps: the CR's
annotation overrides (:mod:`~runner.reconcile.tuning`), the finalizer
(:mod:`~runner.reconcile.finalizer`), the conditions and Events around the run
(:mod:`~runner.reconcile.progress`) and the Ansible run itself
(:mod:`~runner.reconcile.run`, planned by :mod:`runner.ansible.plan`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from runner.ansible import launch, plan
from runner.base import errors, logs
from runner.config import cr_annotations, entry, sections
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, ObjectKey, make_key, split_key
from runner.prune import candidates as prune_candidates
from runner.prune import pruner
from runner.queue import trigger
from runner.rbac import record as rbac_record
from runner.reconcile import finalizer, pause, progress, readiness, run, startup, tuning
from runner.status import recorder

log = logging.getLogger("runner.reconcile")


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


#: Gives each Ansible run the environment its modules use to reach the API server: the
#: owner-injecting proxy's per-run kubeconfig that identifies the owner, or
#: :class:`StaticEnvironment`, the operator's own kubeconfig.
#: An alias of :data:`runner.ansible.plan.Environment`, kept (an allow-listed alias in
#: tests/test_architecture.py) while runner/operations/controllers.py names it here.


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


class Reconciler:
    """Reconciles the custom resources of one watch.

    ``watch`` may be replaced while the runner runs (a reloaded watches.yaml): every
    reconcile reads it afresh and hands it to the collaborators.
    """

    def __init__(
        self,
        *,
        watch: entry.Watch,
        reconcile: sections.ReconcileSettings,
        ansible: sections.AnsibleSettings,
        client: Client,
        runner: launch.AnsibleRunner,
        environment: plan.Environment,
        cache: Cache | None = None,
        on_run: run.RunObserver | None = None,
        events: recorder.Recorder | None = None,
        run_env: Mapping[str, str] | None = None,
        rbac: rbac_record.Record | None = None,
        children: startup.Children | None = None,
        run_slots: threading.Semaphore | None = None,
    ) -> None:
        self.watch = watch
        self.gvk = watch.gvk
        # Told when a reconcile starts and stops waiting for a run slot (the controller's
        # liveness clock leaves the wait out).
        self.on_slot_wait: Callable[[bool], None] = _ignore
        self._client = client
        self._cache = cache
        self._tuning = tuning.Tuning(reconcile=reconcile, ansible=ansible, events=events)
        self._finalizer = finalizer.Finalizer(client=client)
        self._progress = progress.Progress(
            client=client,
            gvk=watch.gvk,
            events=events,
            children=children,
            failures=readiness.Failures(base=reconcile.backoff_base, cap=reconcile.backoff_max),
            field_manager=reconcile.field_manager,
        )
        # Pruning reads what runs touched through the owner-injecting proxy: without it
        # (a static kubeconfig) there is no such account, and nothing is ever pruned.
        proxied = not isinstance(environment, StaticEnvironment)
        self._pruner = pruner.Pruner(client=client, events=events) if proxied else None
        self._ansible = run.AnsibleStep(
            gvk=watch.gvk,
            # run_env is shared: the manager fills it at start-up.
            builder=plan.Builder(ansible=ansible, environment=environment, run_env=run_env),
            reconcile=reconcile,
            runner=runner,
            events=events,
            on_run=on_run,
            rbac=rbac,
            run_slots=run_slots,
        )

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
            self._ansible.forget(request.namespace, request.name, log=rlog)
            return Result()
        meta = obj.get("metadata") or {}
        for part in (meta.get("namespace") or "", meta.get("name") or ""):
            # Name and namespace become directories of the private data dir. The API
            # server never admits these; refuse them here too rather than trust that.
            if part in (".", "..") or "/" in part or "\0" in part:
                raise errors.ReconcileError(f"refusing a name unfit for a path: {part!r}")
        watch = self.watch
        present = self._finalizer.present(obj, watch=watch)
        if meta.get("deletionTimestamp"):
            if not present:
                return Result()  # not ours to hold; garbage collection does the rest
            return self._converge(obj, watch=watch, log=rlog, finalizing=True, why=why)
        if pause.paused(obj):  # after the deletion branch: a paused CR's finalizer still runs
            rlog.info(
                "paused; not reconciling", extra={"annotation": cr_annotations.PAUSED_ANNOTATION}
            )
            self._progress.paused(obj, watch=watch)
            return Result()
        if watch.finalizer is not None and not present:
            obj = self._finalizer.add(obj, watch=watch)
        return self._converge(obj, watch=watch, log=rlog, finalizing=False, why=why)

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

    def _converge(
        self,
        obj: KubeObject,
        *,
        watch: entry.Watch,
        log: logs.BoundLogger,
        finalizing: bool,
        why: trigger.Trigger,
    ) -> Result:
        meta = obj["metadata"]
        try:
            period = self._tuning.period(obj, watch=watch, log=log)
        except ValueError as exc:
            message = f"Unable to parse reconcile period annotation: {exc}"
            self._progress.refused(obj, watch=watch, message=message)
            raise errors.ReconcileError(message) from exc
        verbosity = self._tuning.verbosity(obj, watch=watch, log=log)
        artifacts = self._tuning.artifacts(obj, watch=watch, log=log)

        def waiting(now_waiting: bool) -> None:
            # The wait is not the reconcile's time (liveness), and not a run (status).
            self.on_slot_wait(now_waiting)
            if now_waiting:
                self._progress.waiting(obj, watch=watch)

        with self._ansible.slot(log=log, waiting=waiting):
            started = self._progress.running(obj, watch=watch, why=why)
            if started is None:
                log.info("object deleted (or re-created) before its run; not running it")
                return Result()
            ident = plan.new_ident()  # the artifacts' dir; ansible-operator logs it as job
            log = logs.bind(log, job=ident)
            try:
                result = self._ansible.run(
                    obj,
                    watch=watch,
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
                message = self._progress.run_step_failed(obj, exc, watch=watch, log=log)
                raise errors.ReconcileError(message) from exc
        self._ansible.report(result, meta=meta, log=log)
        seen = self._progress.touched(obj)
        if watch.prune and not result.failed and not finalizing:
            self._prune(obj, seen=seen, watch=watch, log=log)
        self._progress.finished(
            obj, result, watch=watch, started=started, finalizing=finalizing, seen=seen
        )
        if result.failed:
            raise ReconcileFailed(progress.failure_message(result))
        if finalizing:
            self._finalizer.remove(obj, watch=watch)
            log.info("finalizer ran; removed it")
            self._ansible.forget(meta.get("namespace") or "", meta["name"], log=log)
            return Result()
        if result.requeue_after is not None:
            return Result(requeue_after=result.requeue_after, requested=True)
        return Result(requeue_after=period)

    def _prune(
        self,
        obj: KubeObject,
        *,
        seen: startup.Seen | None,
        watch: entry.Watch,
        log: logs.BoundLogger,
    ) -> None:
        """After a successful run: delete the owned children it no longer touched."""
        if self._pruner is None or seen is None:
            log.warning("prune: true needs the owner-injecting proxy's record; not pruning")
            return
        touched = [prune_candidates.Ref(c.api_version, c.kind, c.namespace, c.name) for c in seen]
        self._pruner.prune(obj, touched=touched, skip=watch.blacklist, log=log)


def _ignore(waiting: bool) -> None:
    """No one to tell of slot waits."""
