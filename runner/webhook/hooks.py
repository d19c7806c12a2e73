"""One admission run: the kind's webhook role over the request's object, and its verdict.

The middle of one webhook call (see :mod:`runner.webhook`): the request decoded by
:mod:`runner.webhook.review` becomes the extra vars a reconcile of the object would
get (the shared run plan, :class:`runner.ansible.plan.Builder`, with the watch's
CR-trust settings and the hook's ``vars``) plus
``ansible_operator_admission`` (operation, old_object, user_info, dry_run, uid); the
role runs through the runtime's :class:`~runner.ansible.launch.AnsibleRunner` (warm
launchers, cold when one is down) against a read-only proxy session, in a private
data dir of its own that is removed afterwards. As a reconcile's, the run is in the
RBAC record (:mod:`runner.rbac.record`): the task it is in names the API's 403s it
meets, so ``playbook-operator rbac`` derives the rules webhook roles read with.

The verdict:

- the play succeeded: allowed, with the ``playbook_operator.util.admission`` module's
  warnings and, for a mutation, the JSONPatch from its ``object`` (or its ``patch``);
- a task failed: denied (403) with that task's message (``assert``'s ``fail_msg``);
- the role could not run (a syntax error, a missing role, a launch error) or ran past
  its timeout (killed): the hook's failure policy — ``Fail`` denies with the reason,
  ``Ignore`` allows with the reason as a warning.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.ansible import extravars, launch, plan
from runner.base import errors, logs
from runner.config import admission, entry, sections
from runner.kube.types import KubeObject
from runner.rbac import record as rbac_record
from runner.webhook import review

log = logging.getLogger("runner.webhook")

ADMISSION_VAR = "ansible_operator_admission"
#: The ``admission`` module under the names a task may use for it.
ADMISSION_ACTIONS = frozenset({"admission", "playbook_operator.util.admission"})
#: Where webhook runs' private data dirs live, under --runner-dir (no group starts with ".").
RUNS_DIR = ".webhook"
#: Webhook runs are quiet whatever --ansible-verbosity says for reconciles: -vv costs a
#: quarter of a one-task run's CPU, and a webhook answers within seconds. Failed tasks'
#: messages and Ansible's errors are read all the same.
WEBHOOK_VERBOSITY = 0
#: The run is killed this much before the hook's timeout, so the answer still reaches
#: an API server that waits exactly timeoutSeconds.
_ANSWER_MARGIN = 0.5
#: A run given less than this could not even start Ansible: answered busy instead.
_SHORTEST_RUN = 0.5


@dataclass(frozen=True)
class Served:
    """One path this runner answers: the hook and the watch of its kind."""

    hook: admission.Hook
    watch: entry.Watch


def served(loaded: Sequence[entry.Watch]) -> dict[str, Served]:
    """Every webhook of ``loaded``, by path."""
    found: dict[str, Served] = {}
    for watch in loaded:
        for hook in (watch.validation, watch.mutation):
            if hook is not None:
                found[hook.path] = Served(hook=hook, watch=watch)
    return found


class Hooks:
    """Answers admission requests by running the hooks' roles; safe from many threads."""

    def __init__(
        self,
        *,
        watches: Sequence[entry.Watch],
        ansible: sections.AnsibleSettings,
        runner: launch.AnsibleRunner,
        environment: plan.Environment,
        max_concurrent: int,
        run_env: Mapping[str, str] | None = None,
        rbac: rbac_record.Record | None = None,
    ) -> None:
        """``rbac``: the record each run's current task is noted in (the read-only proxy
        behind ``environment`` notes the run's requests there, by the session's owner)."""
        self.paths = served(watches)
        self._runs_dir = ansible.runner_dir / RUNS_DIR
        self._runner = runner
        self._rbac = rbac
        # run_env is shared: the manager fills it at start-up.
        self._builder = plan.Builder(ansible=ansible, environment=environment, run_env=run_env)
        self._limit = max_concurrent
        self._slots = threading.BoundedSemaphore(max_concurrent)

    def replace(self, loaded: Sequence[entry.Watch]) -> bool:
        """Take edited watches (``run --dev``): the same paths with other roles, vars or
        settings apply to the next request. False, and nothing changed, when the paths
        differ: the API server's webhook configuration names them, a new start serves them."""
        fresh = served(loaded)
        if fresh.keys() != self.paths.keys():
            return False
        self.paths = fresh  # one assignment: a request sees the old or the new mapping
        return True

    def answer(
        self, served_hook: Served, request: review.Request, *, deadline: float
    ) -> review.Verdict:
        """The verdict on ``request``, due by ``deadline`` (``time.monotonic()``: when the
        API server stops waiting); never raises for what the role does."""
        hook = served_hook.hook
        if request.operation not in hook.operations:
            return review.Verdict(allowed=True)  # not registered for this one: no opinion
        rlog = logs.bind(
            log,
            webhook=hook.path,
            uid=request.uid,
            operation=request.operation,
            namespace=request.namespace,
            name=request.name,
        )
        # A slot is worth waiting for only while a run still fits before the deadline.
        patience = deadline - _ANSWER_MARGIN - _SHORTEST_RUN - time.monotonic()
        if patience <= 0 or not self._slots.acquire(timeout=patience):
            rlog.warning("webhook busy", extra={"limit": self._limit})
            return _failed(hook, f"webhook busy: more than {self._limit} runs at once")
        try:
            timeout = deadline - _ANSWER_MARGIN - time.monotonic()
            result, answers = self._run(served_hook, request, log=rlog, timeout=timeout)
        except errors.AnsibleLaunchError as exc:
            rlog.error("webhook role could not start", extra={"error": str(exc)})
            return _failed(hook, f"webhook role could not start: {exc}")
        except Exception:
            # A full disk, a bug: the request still gets the hook's policy, not a bare 500.
            rlog.exception("webhook run failed")
            return _failed(hook, "webhook run failed inside the runner (see its log)")
        finally:
            self._slots.release()
        return verdict(hook, request=request, result=result, answers=answers, log=rlog)

    def _run(
        self,
        served_hook: Served,
        request: review.Request,
        *,
        log: logs.BoundLogger,
        timeout: float,
    ) -> tuple[launch.RunResult, list[Mapping[str, Any]]]:
        hook, watch = served_hook.hook, served_hook.watch
        obj = request.obj if request.obj is not None else request.old
        assert obj is not None  # review.decode refuses a request with neither
        built = self._builder.variables(obj, watch=watch, more_vars=hook.vars)
        if not built.clean:
            log.warning(
                "CR data withheld from Ansible variables",
                extra={
                    "withheld_fields": list(built.withheld_fields),
                    "dropped_keys": list(built.dropped_keys),
                },
            )
        variables = dict(built.variables)
        variables[ADMISSION_VAR] = admission_variable(request, watch=watch)
        answers: list[Mapping[str, Any]] = []
        owner = _owner(obj, request=request, watch=watch)
        meta = owner["metadata"]
        run: rbac_record.RunKey = (watch.gvk, meta["namespace"] or "", meta["name"])

        def collect(event: Mapping[str, Any]) -> None:
            data = event.get("event_data") or {}
            if self._rbac is not None and str(event.get("event", "")).endswith("task_start"):
                self._rbac.task_started(run, str(data.get("task") or data.get("name") or ""))
            if event.get("event") != "runner_on_ok":
                return
            if not ADMISSION_ACTIONS & {data.get("task_action"), data.get("resolved_action")}:
                return
            res = data.get("res")
            if isinstance(res, Mapping) and isinstance(res.get("admission"), Mapping):
                answers.append(res["admission"])

        self._runs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        private = Path(tempfile.mkdtemp(prefix="run-", dir=self._runs_dir))
        if self._rbac is not None:
            self._rbac.run_started(run)
        try:
            with self._builder.open(
                owner=owner,
                content=plan.Content(role=hook.role, playbook=hook.playbook),
                variables=variables,
                private_data_dir=private,
                verbosity=WEBHOOK_VERBOSITY,
                rotate_artifacts=1,
                timeout=max(_SHORTEST_RUN, timeout),
                on_event=collect,
            ) as spec:
                return self._runner.run(spec, log=log), answers
        finally:
            shutil.rmtree(private, ignore_errors=True)
            if self._rbac is not None:
                denials = self._rbac.run_ended(run)
                if denials:
                    # The verdict stays the role's; the operator's log says what RBAC lacks.
                    log.warning(
                        "webhook run denied by the API server",
                        extra={"rbac": rbac_record.needs_message(denials)},
                    )


def verdict(
    hook: admission.Hook,
    *,
    request: review.Request,
    result: launch.RunResult,
    answers: Sequence[Mapping[str, Any]],
    log: logs.BoundLogger,
) -> review.Verdict:
    """What a finished run means for the request (see the module doc)."""
    if result.status == launch.TIMEOUT:
        task = next((t.task for t in reversed(result.failed_tasks)), "ansible-playbook")
        message = f"webhook role timed out after {hook.timeout_seconds}s in task {task!r}"
        log.warning("webhook role timed out", extra={"task": task})
        return _failed(hook, message)
    if result.stats_missing:
        first = result.failed_tasks[0].message if result.failed_tasks else result.status
        log.error("webhook role could not run", extra={"error": first})
        return _failed(hook, f"webhook role could not run: {first}")
    warnings = tuple(str(w) for answer in answers for w in answer.get("warnings") or ())
    if result.failed:
        failed = result.failed_tasks[0]
        log.info("denied", extra={"task": failed.task})
        return review.Verdict(allowed=False, code=403, message=failed.message, warnings=warnings)
    patch = None
    if hook.kind is admission.Kind.MUTATION:
        patch = _patch(request, answers)
    return review.Verdict(allowed=True, patch=patch or None, warnings=warnings)


def _patch(request: review.Request, answers: Sequence[Mapping[str, Any]]) -> list[Any] | None:
    """The last object or patch the role gave, as a JSONPatch over the request's object."""
    for answer in reversed(answers):
        if isinstance(answer.get("patch"), list):
            return list(answer["patch"])
        if isinstance(answer.get("object"), Mapping) and request.obj is not None:
            return review.diff(request.obj, answer["object"])
    return None


def _failed(hook: admission.Hook, message: str) -> review.Verdict:
    """The hook's failure policy applied to an error (not a denial by the role)."""
    if hook.failure_policy is admission.FailurePolicy.IGNORE:
        return review.Verdict(allowed=True, warnings=(f"{message} (failurePolicy Ignore)",))
    return review.Verdict(allowed=False, code=500, message=message)


def admission_variable(request: review.Request, *, watch: entry.Watch) -> dict[str, Any]:
    """``ansible_operator_admission``: everything from the request is data, never a
    template, whatever the watch's ``markUnsafe`` says (the caller may be anyone the API
    server admits); the old object is cleaned and named as the watch's kind."""
    old = None
    if request.old is not None:
        old = extravars.build(
            obj=request.old,
            gvk=watch.gvk,
            snake_case=False,
            mark_unsafe=watch.mark_unsafe,
            watch_vars={},
            finalizer_vars=None,
        ).variables[extravars.object_key(watch.gvk)]
    dropped: list[str] = []
    user_info = extravars.data(dict(request.user_info), dropped=dropped, path="userInfo")
    return {
        "operation": extravars.mark_unsafe(request.operation),
        "old_object": old,
        "user_info": extravars.mark_unsafe(user_info),
        "dry_run": request.dry_run,
        "uid": extravars.mark_unsafe(request.uid),
    }


def _owner(obj: KubeObject, *, request: review.Request, watch: entry.Watch) -> KubeObject:
    """Who the run's proxy session is for: a CREATE's object has no uid (nor maybe a name).
    Of the watch's kind, whatever the request's object claims to be: the RBAC record keys
    the run by it, and a caller must not name kinds there.

    The name carries the request's uid: the RBAC record keys a run by its owner, and an
    admission run may overlap a reconcile of the same object (whose finalizer patch, say,
    is the request) — no object's name holds an ``@``, so the two never share a key."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or request.name or "new"
    return {
        "apiVersion": watch.gvk.api_version,
        "kind": watch.gvk.kind,
        "metadata": {
            "name": f"{name}@{request.uid}",
            "namespace": meta.get("namespace") or request.namespace,
            "uid": meta.get("uid") or request.uid,
        },
    }
