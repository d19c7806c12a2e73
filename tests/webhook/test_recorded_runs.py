"""A webhook run in the RBAC record: its API denials named with its task, beside a
reconcile of the same object that runs at the same time (no cluster: a fake Ansible
that sends what the read-only proxy would account)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from runner.ansible import events, launch
from runner.ansible import spec as ansible_spec
from runner.base import logs
from runner.config import entry as config_entry
from runner.config import sections, watches
from runner.kube.types import GVK, KubeObject
from runner.proxy import audit, ownership, sessions
from runner.rbac import record, rules
from runner.webhook import hooks, review

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
OBJ: dict[str, Any] = {
    "apiVersion": GADGET.api_version,
    "kind": GADGET.kind,
    "metadata": {"name": "g1", "namespace": "ns1", "uid": "obj-uid"},
    "spec": {"size": 1},
}
REQUEST = review.Request(
    uid="req-uid",
    operation="UPDATE",
    obj=OBJ,
    old=OBJ,
    user_info={},
    dry_run=False,
    namespace="ns1",
    name="g1",
)
GET_LIMITS = "/api/v1/namespaces/ns1/configmaps/limits"
RECONCILE_TASK = "Scale the Deployment"
WEBHOOK_TASK = "Read the limits ConfigMap"


class _Proxy:
    """The webhook's environment: a session per run, accounted as the read-only proxy does."""

    def __init__(self, seen: record.Record) -> None:
        self.audit = audit.Audit(seen.reads_only())
        self.session: sessions.Session | None = None

    @contextlib.contextmanager
    def for_owner(self, owner: KubeObject) -> Iterator[Mapping[str, str]]:
        self.session = sessions.Session(owner=ownership.Owner.of(owner))
        yield {}


class _Ansible:
    """Enters one task, whose GET of a ConfigMap the API server answers 403, and fails."""

    def __init__(self, proxy: _Proxy) -> None:
        self._proxy = proxy

    def run(self, spec: ansible_spec.RunSpec, *, log: logs.BoundLogger) -> launch.RunResult:
        assert spec.on_event is not None, "expected the webhook run to follow its events"
        spec.on_event({"event": "playbook_on_task_start", "event_data": {"task": WEBHOOK_TASK}})
        assert self._proxy.session is not None
        self._proxy.audit.account(self._proxy.session, method="GET", path=GET_LIMITS, status=403)
        failed = events.FailedTask(task=WEBHOOK_TASK, role="r", message="Forbidden")
        return launch.RunResult(
            ok=0,
            changed=0,
            skipped=0,
            failures=1,
            completion="",
            failed=True,
            failed_tasks=(failed,),
            requeue_after=None,
            stats_missing=False,
            duration=0.1,
            artifact_dir=Path("."),
            status="failed",
            rc=2,
            output_tail="",
        )


def _watch(tmp_path: Path) -> config_entry.Watch:
    for role in ("gadget", "gadget_validate"):
        (tmp_path / "roles" / role / "tasks").mkdir(parents=True)
        (tmp_path / "roles" / role / "tasks" / "main.yml").write_text("---\n[]\n")
    path = tmp_path / "watches.yaml"
    path.write_text(
        f"- group: {GADGET.group}\n  version: v1\n  kind: Gadget\n  role: gadget\n"
        "  validation:\n    role: gadget_validate\n"
    )
    (watch,) = watches.load(path, environ={}, base_dir=tmp_path)
    return watch


def test_a_webhook_runs_denial_names_its_task_and_leaves_a_reconciles_run_alone(
    tmp_path: Path,
) -> None:
    seen = record.Record()
    reconcile = (GADGET, "ns1", "g1")
    seen.run_started(reconcile)
    seen.task_started(reconcile, RECONCILE_TASK)
    proxy = _Proxy(seen)
    watch = _watch(tmp_path)
    answerer = hooks.Hooks(
        watches=[watch],
        ansible=dataclasses.replace(sections.AnsibleSettings(), runner_dir=tmp_path / "runner"),
        runner=_Ansible(proxy),  # type: ignore[arg-type]
        environment=proxy,
        max_concurrent=1,
        rbac=seen,
    )
    assert watch.validation is not None
    verdict = answerer.answer(
        answerer.paths[watch.validation.path], REQUEST, deadline=time.monotonic() + 30
    )
    assert not verdict.allowed and verdict.message == "Forbidden", f"verdict {verdict}"

    (entry,) = seen.snapshot()["watches"]
    denied = [(d["verb"], d["resource"], d["namespace"], d["task"]) for d in entry["denied"]]
    expected = [("get", "configmaps", "ns1", WEBHOOK_TASK)]
    assert denied == expected, (
        f"expected the webhook run's 403 with its task {expected}, saw {denied}"
    )
    uses = [(u["verb"], u["resource"], u["source"]) for u in entry["uses"]]
    assert uses == [("get", "configmaps", rules.RUN)], f"expected the read recorded, saw {uses}"

    # The reconcile of the same Gadget was running all along: its run is its own.
    patch = rules.Use(group="apps", resource="deployments", verb="patch", namespace="ns1")
    seen.denied(GADGET, patch, run=reconcile)
    ended = seen.run_ended(reconcile)
    assert ended == [record.Denial(use=patch, task=RECONCILE_TASK)], (
        f"expected the reconcile's run to keep only its own denial and task, saw {ended}"
    )
