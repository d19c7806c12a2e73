"""A webhook answers before the API server stops waiting: a request that cannot get a run
slot in time gets the hook's failure policy at once, and a run gets only the time left."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from runner.base import logs
from runner.config import sections, watches
from runner.kube.types import GVK, KubeObject
from runner.webhook import hooks, review
from tests.reconcile import fakes

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
REQUEST = review.Request(
    uid="u",
    operation="CREATE",
    obj={"apiVersion": GADGET.api_version, "kind": "Gadget", "metadata": {"name": "g"}},
    old=None,
    user_info={},
    dry_run=False,
    namespace="ns",
    name="g",
)


class _Environment:
    @contextlib.contextmanager
    def for_owner(self, owner: KubeObject) -> Iterator[Mapping[str, str]]:
        yield {}


class _HeldRun:
    """A run that lasts until released; records the timeout each run was given."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.timeouts: list[float | None] = []

    def run(self, spec: ansible_spec.RunSpec, *, log: logs.BoundLogger) -> launch.RunResult:
        self.timeouts.append(spec.timeout)
        self.started.set()
        self.release.wait(timeout=60)
        return fakes.succeeded()


def _answerer(tmp_path: Path, runner: _HeldRun) -> tuple[hooks.Hooks, hooks.Served]:
    (tmp_path / "roles" / "v" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "v" / "tasks" / "main.yml").write_text("---\n[]\n")
    path = tmp_path / "watches.yaml"
    path.write_text(
        f"- group: {GADGET.group}\n  version: v1\n  kind: Gadget\n  role: v\n"
        "  validation:\n    role: v\n    timeoutSeconds: 10\n    failurePolicy: Fail\n"
    )
    (watch,) = watches.load(path, environ={}, base_dir=tmp_path)
    answerer = hooks.Hooks(
        watches=[watch],
        ansible=dataclasses.replace(sections.AnsibleSettings(), runner_dir=tmp_path / "runner"),
        runner=runner,  # type: ignore[arg-type]
        environment=_Environment(),
        max_concurrent=1,
    )
    assert watch.validation is not None
    return answerer, answerer.paths[watch.validation.path]


def test_a_request_without_a_slot_in_time_is_answered_busy_before_its_deadline(
    tmp_path: Path,
) -> None:
    runner = _HeldRun()
    answerer, served = _answerer(tmp_path, runner)
    first = threading.Thread(
        target=answerer.answer,
        args=(served, REQUEST),
        kwargs={"deadline": time.monotonic() + 30},
        daemon=True,
    )
    first.start()
    assert runner.started.wait(timeout=30), "the first run never started"
    try:
        deadline = time.monotonic() + 2.0
        verdict = answerer.answer(served, REQUEST, deadline=deadline)
        answered = time.monotonic()
    finally:
        runner.release.set()
        first.join(timeout=30)
    assert answered < deadline, f"answered {answered - deadline:.2f} s after the deadline"
    assert not verdict.allowed and "webhook busy" in verdict.message, verdict


def test_a_run_gets_the_time_left_not_the_hooks_whole_timeout(tmp_path: Path) -> None:
    runner = _HeldRun()
    runner.release.set()
    answerer, served = _answerer(tmp_path, runner)
    answerer.answer(served, REQUEST, deadline=time.monotonic() + 4.0)
    (given,) = runner.timeouts
    assert given is not None and given <= 3.5, f"expected at most 3.5 s for the run, saw {given}"
