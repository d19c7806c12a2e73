"""Reconcile, preview and webhook runs are planned by one builder (runner.ansible.plan).

The same CR through each caller gets its RunSpec from :class:`plan.Builder`, with the same
extra vars for the CR and the same paths and event logging; only what the caller passes
differs (check mode, the webhook's review, the run's directory and limits).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from runner.ansible import plan
from runner.ansible import spec as ansible_spec
from runner.config import entry, sections, watches
from runner.kube.types import KubeObject
from runner.reconcile import reconciler
from runner.tools.preview import report, session, target
from runner.webhook import hooks, review
from tests.reconcile import fakes
from tests.runner.support import PROBE

WATCH = (
    f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: probe\n"
    "  vars: {greeting: hello}\n"
    "  validation:\n    role: probe_validate\n"
)


def _watch(tmp_path: Path) -> entry.Watch:
    for role in ("probe", "probe_validate"):
        (tmp_path / "roles" / role / "tasks").mkdir(parents=True, exist_ok=True)
        (tmp_path / "roles" / role / "tasks" / "main.yml").write_text("---\n[]\n")
    (tmp_path / "watches.yaml").write_text(WATCH)
    return watches.load(tmp_path / "watches.yaml", environ={}, base_dir=tmp_path)[0]


def _ansible(tmp_path: Path) -> sections.AnsibleSettings:
    return sections.AnsibleSettings(
        runner_dir=tmp_path / "runner", roles_path=("/extra/roles",), args="--diff"
    )


def _reconcile(tmp_path: Path, obj: KubeObject, runner: fakes.FakeRunner) -> None:
    one = reconciler.Reconciler(
        watch=_watch(tmp_path),
        reconcile=sections.ReconcileSettings(),
        ansible=_ansible(tmp_path),
        client=cast(Any, fakes.FakeClient(obj)),
        runner=cast(Any, runner),
        environment=reconciler.StaticEnvironment(None),
    )
    one.reconcile(fakes.request(obj["metadata"]["name"]))


def _preview(tmp_path: Path, obj: KubeObject, runner: fakes.FakeRunner) -> None:
    session.run(
        target=target.Target(obj=obj, watch=_watch(tmp_path), exists=True),
        ansible=_ansible(tmp_path),
        environment=reconciler.StaticEnvironment(None),
        collector=report.Collector(),
        runner=cast(Any, runner),
    )


def _webhook(tmp_path: Path, obj: KubeObject, runner: fakes.FakeRunner) -> None:
    answerer = hooks.Hooks(
        watches=(_watch(tmp_path),),
        ansible=_ansible(tmp_path),
        runner=cast(Any, runner),
        environment=reconciler.StaticEnvironment(None),
        max_concurrent=1,
    )
    (served,) = answerer.paths.values()
    request = review.Request(
        uid="u",
        operation="CREATE",
        obj=obj,
        old=None,
        user_info={},
        dry_run=False,
        namespace="ns",
        name=obj["metadata"]["name"],
    )
    answerer.answer(served, request, deadline=time.monotonic() + 30)


Caller = Callable[[Path, KubeObject, fakes.FakeRunner], None]


def _planned(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caller: Caller
) -> tuple[ansible_spec.RunSpec, list[ansible_spec.RunSpec]]:
    """The spec ``caller`` ran, and the specs plan.Builder built meanwhile."""
    built: list[ansible_spec.RunSpec] = []
    original = plan.Builder.open

    @contextlib.contextmanager
    def spy(self: plan.Builder, **kwargs: Any) -> Iterator[ansible_spec.RunSpec]:
        with original(self, **kwargs) as spec:
            built.append(spec)
            yield spec

    monkeypatch.setattr(plan.Builder, "open", spy)
    runner = fakes.FakeRunner(tmp_path)
    caller(tmp_path, fakes.probe_object("p"), runner)
    assert len(runner.specs) == 1, f"expected one run, saw {len(runner.specs)}"
    return runner.specs[0], built


CALLERS = [
    pytest.param(_reconcile, id="reconcile"),
    pytest.param(_preview, id="preview"),
    pytest.param(_webhook, id="webhook"),
]


@pytest.mark.parametrize("caller", CALLERS)
def test_each_run_is_built_by_the_plan_builder(
    caller: Caller, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec, built = _planned(monkeypatch, tmp_path, caller)
    assert built == [spec], f"expected the run's spec from plan.Builder, saw built={built}"


@pytest.mark.parametrize("caller", CALLERS[1:])
def test_the_same_cr_gets_the_same_variables_and_paths(
    caller: Caller, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reconciled, _ = _planned(monkeypatch, tmp_path / "a", _reconcile)
    other, _ = _planned(monkeypatch, tmp_path / "b", caller)
    theirs = {k: v for k, v in other.extravars.items() if k != hooks.ADMISSION_VAR}
    assert theirs == dict(reconciled.extravars), (
        f"expected the reconcile's extra vars {dict(reconciled.extravars)}, saw {theirs}"
    )

    def shared(spec: ansible_spec.RunSpec) -> tuple[object, ...]:
        # The role's own roles_path (each project's tmp dir) first, then the settings'.
        return (tuple(spec.roles_path)[1:], spec.log_events, tuple(spec.collections_path))

    seen, expected = shared(other), shared(reconciled)
    assert seen == expected, f"expected paths and event logging {expected}, saw {seen}"
