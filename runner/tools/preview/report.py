"""What a check-mode run would have done, read from its task results.

Part of ``playbook-operator preview`` (watch → queue → reconcile → **ansible** →
status, run once by hand, in check mode, without the first three). The job events
of the run (:class:`Collector`) become a :class:`Report`:

- per object a kubernetes.core task touched: would create, would change (with
  the diff Ansible's ``--diff`` gives), would delete, or unchanged;
- the status the role would write (``k8s_status``'s result in check mode) and the
  conditions the runner would write after the run (Successful or Failure);
- the tasks that are not check-mode safe: a task that failed in check mode, or
  one skipped because its module has no check mode;
- the writes the read-only proxy refused (a module that wrote without a dry run).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import yaml

from runner.ansible import launch
from runner.proxy import RefusedWrite

_RESULT_EVENTS = frozenset({"runner_on_ok", "runner_on_failed", "runner_on_skipped"})
_STATUS_ACTIONS = ("k8s_status",)
_EVENT_ACTIONS = ("k8s_event",)


class Change(StrEnum):
    CREATE = "would create"
    CHANGE = "would change"
    DELETE = "would delete"
    UNCHANGED = "unchanged"


class Unsafe(StrEnum):
    FAILED = "failed in check mode"
    NO_CHECK_MODE = "skipped: no check mode"


@dataclass(frozen=True)
class ObjectChange:
    change: Change
    api_version: str
    kind: str
    namespace: str
    name: str
    task: str
    diff: str = ""  # a unified diff of the changed fields, as YAML

    @property
    def label(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.api_version} {self.kind} {where}"


@dataclass(frozen=True)
class UnsafeTask:
    task: str
    reason: Unsafe
    message: str


@dataclass(frozen=True)
class Report:
    """Everything the preview prints; ``to_json`` gives it as data."""

    subject: str  # "cache.example.com/v1alpha1 Memcached ns/name"
    target: str  # "role memcached" or "playbook /path"
    exists: bool  # the CR is in the cluster (else the preview is of a new CR)
    objects: tuple[ObjectChange, ...]
    role_status: Mapping[str, Any] | None  # what k8s_status would write, if it would
    status_task: str
    runner_status: str  # "Successful" or "Failure: <message>"
    ansible_result: Mapping[str, int]
    unsafe: tuple[UnsafeTask, ...]
    refused: tuple[str, ...]  # "METHOD path" of writes the proxy refused
    events: tuple[str, ...] = field(default=())  # "<type> <reason>: <message>"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True, default=str)


class Collector:
    """Keeps the task results of one run (a ``RunSpec.on_event`` callback)."""

    def __init__(self) -> None:
        self.results: list[Mapping[str, Any]] = []

    def __call__(self, event: Mapping[str, Any]) -> None:
        if event.get("event") in _RESULT_EVENTS:
            self.results.append(event)


def build(
    *,
    subject: str,
    target: str,
    exists: bool,
    events: Sequence[Mapping[str, Any]],
    result: launch.RunResult,
    refused: Sequence[RefusedWrite],
) -> Report:
    objects: list[ObjectChange] = []
    unsafe: list[UnsafeTask] = []
    recorded: list[str] = []
    role_status: Mapping[str, Any] | None = None
    status_task = ""
    for event in events:
        data = event.get("event_data") or {}
        task = str(data.get("task") or data.get("task_action") or "")
        action = str(data.get("resolved_action") or data.get("task_action") or "")
        res = data.get("res") if isinstance(data.get("res"), Mapping) else {}
        assert isinstance(res, Mapping)
        name = event.get("event")
        if name == "runner_on_failed":
            if not data.get("ignore_errors"):
                unsafe.append(UnsafeTask(task=task, reason=Unsafe.FAILED, message=_message(res)))
            continue
        if name == "runner_on_skipped":
            unsafe.extend(_no_check_mode(task, _items(res or _printed(event)))[:1])
            continue
        unsafe.extend(_no_check_mode(task, [i for i in _items(res) if i.get("skipped")]))
        for item in _items(res):
            if item.get("skipped"):
                continue
            if action.endswith(_STATUS_ACTIONS):
                instance = item.get("result")
                if item.get("changed") and isinstance(instance, Mapping):
                    role_status, status_task = instance.get("status") or {}, task
                continue
            if action.endswith(_EVENT_ACTIONS):
                if item.get("changed"):
                    recorded.append(_event_line(item))
                continue
            objects.extend(_objects(item, task=task))
    summary = {
        "ok": result.ok,
        "changed": result.changed,
        "skipped": result.skipped,
        "failures": result.failures,
    }
    if result.failed:
        messages = "; ".join(f"{t.task}: {t.message}" for t in result.failed_tasks)
        runner_status = f"Failure: {messages}"
    else:
        runner_status = "Successful"
    return Report(
        subject=subject,
        target=target,
        exists=exists,
        objects=tuple(objects),
        role_status=role_status,
        status_task=status_task,
        runner_status=runner_status,
        ansible_result=summary,
        unsafe=tuple(unsafe),
        refused=tuple(f"{w.method} {w.path.split('?', 1)[0]}" for w in refused),
        events=tuple(recorded),
    )


def _no_check_mode(task: str, skipped: list[Mapping[str, Any]]) -> list[UnsafeTask]:
    """Skips because of check mode ("does not support check mode", "would have run if
    not in check mode"), not because of a ``when``."""
    return [
        UnsafeTask(task=task, reason=Unsafe.NO_CHECK_MODE, message=str(item["msg"]))
        for item in skipped
        if "check mode" in str(item.get("msg", ""))
    ]


def _printed(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """A skipped task's result: ansible-runner's event leaves it out; Ansible prints it
    (from verbosity 1) after ``=>``."""
    _, arrow, text = str(event.get("stdout") or "").partition("=> ")
    if not arrow:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _items(res: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A task's results: its own, or one per loop item."""
    results = res.get("results")
    if isinstance(results, list) and "method" not in res:
        return [r for r in results if isinstance(r, Mapping)]
    return [res]


def _objects(res: Mapping[str, Any], *, task: str) -> list[ObjectChange]:
    """Object changes in one kubernetes.core result (one definition, or several)."""
    if "method" not in res:
        inner = res.get("result")
        nested = inner.get("results") if isinstance(inner, Mapping) else None
        if isinstance(nested, list):
            return [c for r in nested if isinstance(r, Mapping) for c in _objects(r, task=task)]
        return []
    method = str(res["method"])
    instance = res.get("result")
    if not isinstance(instance, Mapping):
        instance = {}
    meta = instance.get("metadata") or {}
    changed = bool(res.get("changed"))
    before = res["diff"].get("before") if isinstance(res.get("diff"), Mapping) else None
    if changed and (method == "create" or (method == "apply" and not before)):
        change = Change.CREATE
    elif method == "delete":
        if not changed:
            return []  # nothing there to delete
        change = Change.DELETE
    else:
        change = Change.CHANGE if changed else Change.UNCHANGED
    diff = ""
    if change is Change.CHANGE and isinstance(res.get("diff"), Mapping):
        diff = _unified(_shown(before), _shown(res["diff"].get("after")))
    return [
        ObjectChange(
            change=change,
            api_version=str(instance.get("apiVersion", "")),
            kind=str(instance.get("kind", "")),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            task=task,
            diff=diff,
        )
    ]


#: Fields every write changes; a diff of them says nothing about the role's intent.
_NOISE = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _shown(side: Any) -> Any:
    """One side of a diff without the bookkeeping fields of the API server and of apply."""
    if not isinstance(side, Mapping):
        return side
    shown = dict(side)
    meta = shown.get("metadata")
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in _NOISE}
        annotations = meta.get("annotations")
        if isinstance(annotations, Mapping):
            annotations = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
            meta["annotations"] = annotations
            if not annotations:
                del meta["annotations"]
        shown["metadata"] = meta
        if not meta:
            del shown["metadata"]
    return shown


def _unified(before: Any, after: Any) -> str:
    def lines(value: Any) -> list[str]:
        if not value:
            return []
        return yaml.safe_dump(value, sort_keys=True, default_flow_style=False).splitlines()

    return "\n".join(
        difflib.unified_diff(lines(before), lines(after), "live", "after", lineterm="", n=2)
    )


def _event_line(res: Mapping[str, Any]) -> str:
    event = res.get("result") if isinstance(res.get("result"), Mapping) else {}
    assert isinstance(event, Mapping)
    return f"{event.get('type', '')} {event.get('reason', '')}: {event.get('message', '')}".strip()


def _message(res: Mapping[str, Any]) -> str:
    msg = res.get("msg")
    if isinstance(msg, str) and msg.strip():
        return msg.strip()
    return json.dumps({k: v for k, v in res.items() if not k.startswith("_")}, default=str)[:500]


def render(report: Report) -> str:
    """The report as the terminal shows it."""
    new = "" if report.exists else " (not in the cluster: previewed as new)"
    out = [
        f"Preview of {report.subject}{new}",
        f"  {report.target}, check mode with diffs; writes refused: nothing was changed",
        "",
        "Objects:",
    ]
    marks = {Change.CREATE: "+", Change.CHANGE: "~", Change.DELETE: "-", Change.UNCHANGED: "="}
    if not report.objects:
        out.append("  (none touched)")
    for obj in report.objects:
        out.append(f"  {marks[obj.change]} {obj.change:<13} {obj.label}   [{obj.task}]")
        out.extend(f"      {line}" for line in obj.diff.splitlines())
    out += ["", "Status the role would write:"]
    if report.role_status is None:
        out.append("  (none: no k8s_status task would change it)")
    else:
        out.append(f"  [{report.status_task}]")
        dumped = yaml.safe_dump(dict(report.role_status), sort_keys=True)
        out.extend(f"    {line}" for line in dumped.splitlines())
    counts = ", ".join(f"{k}={v}" for k, v in report.ansible_result.items())
    out += ["", "Status the runner would write:", f"  {report.runner_status} ({counts})"]
    if report.events:
        out += ["", "Events the role would record:"]
        out.extend(f"  {line}" for line in report.events)
    if report.unsafe:
        out += ["", "Not check-mode safe:"]
        out.extend(f"  {t.task}: {t.reason} ({t.message})" for t in report.unsafe)
    if report.refused:
        out += ["", "Writes refused by the read-only proxy:"]
        out.extend(f"  {line}" for line in report.refused)
    return "\n".join(out) + "\n"
