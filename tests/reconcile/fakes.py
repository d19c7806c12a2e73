"""Fakes for reconciler unit tests: an API server holding objects, a runner, an event sink.

Only the calls :class:`runner.reconcile.reconciler.Reconciler` makes are implemented; every
status patch is checked against ``resourceVersion`` and ``uid`` as the API server
checks them, so tests see the same conflicts a real cluster would give.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from runner.config import entry, sections, watches
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject
from runner.reconcile import reconciler
from runner.reconcile import run as reconcile_run
from runner.status import recorder
from tests.runner.support import PROBE


def probe_object(
    name: str = "p", *, annotations: dict[str, str] | None = None, uid: str = "uid-1"
) -> KubeObject:
    return {
        "apiVersion": PROBE.api_version,
        "kind": PROBE.kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": "1",
            "generation": 1,
            "annotations": dict(annotations or {}),
        },
        "spec": {"message": "x"},
    }


class FakeClient:
    """One object; GET, status PATCH (resourceVersion and uid preconditions), CREATE."""

    def __init__(self, obj: KubeObject | None) -> None:
        self.obj = obj
        self.patches: list[dict[str, Any]] = []

    def _missing(self, method: str) -> kube_errors.NotFoundError:
        return kube_errors.NotFoundError(status=404, method=method, path="/x", body={})

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        if self.obj is None:
            raise self._missing("GET")
        return copy.deepcopy(self.obj)

    def patch(
        self,
        gvk: GVK,
        *,
        name: str,
        namespace: str | None = None,
        body: Any,
        content_type: str = "",
        subresource: str = "",
        query: Any = None,
    ) -> KubeObject:
        """A merge of the status keys sent (the runtime's server-side apply sends only its
        own, the whole merged conditions list without managedFields)."""
        self.patches.append(copy.deepcopy(body))
        if self.obj is None:
            raise self._missing("PATCH")
        meta = self.obj["metadata"]
        sent = body.get("metadata") or {}
        for key in ("resourceVersion", "uid"):
            if key in sent and sent[key] != meta[key]:
                raise kube_errors.ConflictError(status=409, method="PATCH", path="/x", body={})
        if subresource == "status":
            self.obj["status"] = {**(self.obj.get("status") or {}), **body["status"]}
        else:
            meta.update({k: v for k, v in sent.items() if k != "resourceVersion"})
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return copy.deepcopy(self.obj)

    def conditions(self) -> dict[str, dict[str, Any]]:
        assert self.obj is not None
        found = (self.obj.get("status") or {}).get("conditions") or []
        return {c["type"]: c for c in found}


def succeeded(*, artifact_dir: Path = Path("."), completion: str = "") -> launch.RunResult:
    """A run that went well: one task ok, nothing changed."""
    return launch.RunResult(
        ok=1,
        changed=0,
        skipped=0,
        failures=0,
        completion=completion,
        failed=False,
        failed_tasks=(),
        requeue_after=None,
        stats_missing=False,
        duration=0.1,
        artifact_dir=artifact_dir,
        status="successful",
        rc=0,
        output_tail="",
    )


class FakeRunner:
    """Records each RunSpec; ``behave`` decides the run's outcome (default: success)."""

    def __init__(self, tmp_path: Path) -> None:
        self.specs: list[ansible_spec.RunSpec] = []
        self.tmp_path = tmp_path
        self.behave: Callable[[ansible_spec.RunSpec], None] = lambda spec: None

    def run(self, spec: ansible_spec.RunSpec, *, log: Any) -> launch.RunResult:
        self.specs.append(spec)
        spec.private_data_dir.mkdir(parents=True, exist_ok=True)
        self.behave(spec)
        return succeeded(
            artifact_dir=spec.private_data_dir / "artifacts" / spec.ident,
            completion="2024-01-01T00:00:00Z",
        )


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[bool, str, str]] = []

    def record(self, obj: KubeObject, *, warning: bool, reason: str, message: str) -> None:
        self.events.append((warning, reason, message))

    def warnings(self) -> list[str]:
        return [message for warning, _, message in self.events if warning]


def load_watch(tmp_path: Path, extra: str = "") -> entry.Watch:
    (tmp_path / "roles" / "probe").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "watches.yaml"
    path.write_text(f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: probe\n{extra}")
    return watches.load(path, environ={}, base_dir=tmp_path)[0]


def make_reconciler(
    *,
    tmp_path: Path,
    client: FakeClient,
    runner: FakeRunner,
    events: FakeRecorder | None = None,
    watch_extra: str = "",
    on_run: reconcile_run.RunObserver | None = None,
    **overrides: Any,
) -> reconciler.Reconciler:
    """``overrides`` are the settings' flag names (``reconcile_timeout``,
    ``ansible_verbosity``): each goes to the section that holds it."""
    watch = load_watch(tmp_path, watch_extra)
    reconcile, ansible = _sections({"runner_dir": tmp_path / "runner", **overrides})
    return reconciler.Reconciler(
        watch=watch,
        reconcile=reconcile,
        ansible=ansible,
        client=cast(Any, client),
        runner=cast(Any, runner),
        environment=reconciler.StaticEnvironment(None),
        events=cast(recorder.Recorder, events) if events is not None else None,
        on_run=on_run,
    )


def _sections(
    fields: dict[str, Any],
) -> tuple[sections.ReconcileSettings, sections.AnsibleSettings]:
    reconcile_names = {f.name for f in dataclasses.fields(sections.ReconcileSettings)}
    ansible_names = {f.name for f in dataclasses.fields(sections.AnsibleSettings)}
    reconcile: dict[str, Any] = {}
    ansible: dict[str, Any] = {}
    for name, value in fields.items():
        if name in reconcile_names:
            reconcile[name] = value
        elif name.removeprefix("ansible_") in ansible_names:
            ansible[name.removeprefix("ansible_")] = value
        else:
            raise TypeError(f"no settings section holds {name!r}")
    return sections.ReconcileSettings(**reconcile), sections.AnsibleSettings(**ansible)


def request(name: str = "p") -> reconciler.Request:
    return reconciler.Request(gvk=PROBE, namespace="ns", name=name)
