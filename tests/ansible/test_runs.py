"""Real ansible-playbook runs through AnsibleRunner, on tiny fixture playbooks and roles.

No cluster is needed: the plays only use local modules.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import uuid
from datetime import date
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from runner.ansible import events, extravars, launch
from runner.ansible import spec as ansible_spec
from runner.base import errors
from runner.config import sections
from runner.kube.types import GVK
from tests.ansible.conftest import (
    PLAYBOOKS,
    ROLES,
    Captured,
    RunPlaybook,
    debug_outputs,
)


def test_success_reports_localhost_stats(run_playbook: RunPlaybook) -> None:
    result = run_playbook("debug")
    assert (result.ok, result.changed, result.skipped, result.failures) == (1, 0, 0, 0)
    assert not result.failed and not result.stats_missing
    assert result.failed_tasks == ()
    assert result.requeue_after is None
    assert result.completion.endswith("Z"), result.completion
    assert result.status == "successful" and result.rc == 0
    assert result.duration > 0
    assert (result.artifact_dir / "stdout").read_text().count("Say hello") == 1


def test_failing_task_fails_the_run_with_its_name_and_message(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    result = run_playbook("failing")
    assert result.failed
    assert result.failed_tasks == (
        events.FailedTask(task="Break it", role=None, message="the widget is broken"),
    )
    assert (result.ok, result.failures) == (1, 1)
    _, handler = captured
    (line,) = handler.with_message("task failed")
    assert line.levelno == logging.ERROR
    assert (line.__dict__["task"], line.__dict__["error"]) == ("Break it", "the widget is broken")


def test_ignored_and_rescued_failures_do_not_fail_the_run(run_playbook: RunPlaybook) -> None:
    result = run_playbook("tolerated")
    assert not result.failed, result.failed_tasks
    assert result.failures == 0


def test_a_rescued_failure_does_not_hide_a_later_real_one(run_playbook: RunPlaybook) -> None:
    result = run_playbook("rescued_then_failing")
    assert [t.message for t in result.failed_tasks] == ["real failure"]


def test_requeue_after_period_is_read(run_playbook: RunPlaybook) -> None:
    result = run_playbook("requeue")
    assert result.requeue_after == 90.0
    assert not result.failed


def test_requeue_after_without_unit_fails_the_task(run_playbook: RunPlaybook) -> None:
    result = run_playbook("requeue_invalid")
    assert result.requeue_after is None
    (failed,) = result.failed_tasks
    assert "invalid time input" in failed.message


def test_no_log_values_never_reach_the_logs_or_the_result(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    secret = "hunter2-" + uuid.uuid4().hex
    runs = [(level, 0) for level in sections.LogEvents]
    runs.append((sections.LogEvents.TASKS, 3))  # verbose: Ansible's output is logged
    for level, verbosity in runs:
        result = run_playbook(
            "secret", extravars={"password": secret}, log_events=level, verbosity=verbosity
        )
        assert result.failed, "the no_log task that fails still fails the run"
        assert secret not in repr(result)
    _, handler = captured
    assert handler.records, "the runs logged something"
    assert secret not in handler.everything()


def test_artifacts_are_rotated(run_playbook: RunPlaybook, tmp_path: Path) -> None:
    results = [run_playbook("debug", rotate_artifacts=2) for _ in range(3)]
    artifacts = tmp_path / "pdd" / "artifacts"
    kept = sorted(p.name for p in artifacts.iterdir() if not p.is_symlink())
    assert kept == sorted(r.artifact_dir.name for r in results[1:])
    assert (artifacts / "latest").resolve() == results[-1].artifact_dir.resolve()


def test_role_runs_with_its_defaults(
    runner: launch.AnsibleRunner, captured: tuple[logging.Logger, Captured], tmp_path: Path
) -> None:
    logger, handler = captured
    spec = ansible_spec.RunSpec(
        ident="role-run",
        private_data_dir=tmp_path / "pdd",
        role="greeter",
        roles_path=(ROLES,),
        extravars={},
    )
    result = runner.run(spec, log=logger)
    assert (result.ok, result.failed) == (1, False)
    assert debug_outputs(handler) == {"Greet": "hello world"}
    (line,) = handler.with_message("debug")
    assert line.__dict__["role"] == "greeter"


def test_extravars_reach_the_play(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    run_playbook("secret", extravars={"password": "x"}, log_events=sections.LogEvents.NOTHING)
    _, handler = captured
    assert handler.records == [], "LogEvents.Nothing logs nothing"


def test_cmdline_is_passed_with_outer_quotes_stripped(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    result = run_playbook("tagged", cmdline="'--tags only'")
    assert result.ok == 1
    _, handler = captured
    assert debug_outputs(handler) == {"Tagged": "tagged"}


def test_bad_cmdline_quoting_is_a_launch_error(run_playbook: RunPlaybook) -> None:
    with pytest.raises(errors.AnsibleLaunchError):
        run_playbook("debug", cmdline="--tags 'only")


def test_play_that_cannot_start_reports_missing_stats(run_playbook: RunPlaybook) -> None:
    result = run_playbook("broken")
    assert result.stats_missing
    assert "no_such_module_anywhere" in result.output_tail, result.output_tail
    assert result.failed, "a play that never ran must not pass for a success"
    (failed,) = result.failed_tasks
    assert failed.task == "ansible-playbook"
    assert "ERROR" in failed.message and "no_such_module_anywhere" in failed.message


def test_timeout_stops_the_run(run_playbook: RunPlaybook) -> None:
    result = run_playbook("slow", timeout=2)
    assert result.status == "timeout"
    assert result.stats_missing
    # "... in task 'Sleep'" unless a loaded machine had not reached it in 2 s: the task
    # named is tests/ansible/test_timeout.py's concern.
    (failed,) = result.failed_tasks
    assert failed.message.startswith("the Ansible run timed out after 2s"), failed
    assert result.duration < 20


# -- Jinja in CR data ------------------------------------------------------------

TEMPLATED_CR: dict[str, Any] = {
    "apiVersion": "ansible-tests.playbook-operator.dev/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {"sizeText": "{{ 6 * 7 }}", "nested": [{"text": "{{ 'x' * 3 }}"}]},
}


def run_templated(run_playbook: RunPlaybook, handler: Captured, *, mark_unsafe: bool) -> Any:
    variables = extravars.build(
        obj=TEMPLATED_CR,
        gvk=GVK.of(TEMPLATED_CR),
        snake_case=True,
        mark_unsafe=mark_unsafe,
        watch_vars={},
        finalizer_vars=None,
    ).variables
    result = run_playbook("templated", extravars=variables)
    assert not result.failed, result.failed_tasks
    return debug_outputs(handler)


def test_mark_unsafe_keeps_jinja_in_cr_strings_literal(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    outputs = run_templated(run_playbook, captured[1], mark_unsafe=True)
    assert outputs == {
        "Spec parameter": "{{ 6 * 7 }}",
        "Full object": "{{ 6 * 7 }}",
        "Raw spec": "{{ 'x' * 3 }}",
    }


def test_a_decodable_key_in_cr_data_does_not_undo_mark_unsafe(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    """A malformed ``__ansible_unsafe`` makes ansible-core re-read the whole extra vars
    file as YAML, where no wrapper counts: the key must never reach the file."""
    poisoned = {**TEMPLATED_CR, "spec": {**TEMPLATED_CR["spec"], "p": {"__ansible_unsafe": 5}}}
    built = extravars.build(
        obj=poisoned,
        gvk=GVK.of(poisoned),
        snake_case=True,
        mark_unsafe=True,
        watch_vars={},
        finalizer_vars=None,
    )
    assert built.dropped_keys == ("spec.p.__ansible_unsafe",)
    result = run_playbook("templated", extravars=built.variables)
    assert not result.failed, result.failed_tasks
    assert debug_outputs(captured[1]) == {
        "Spec parameter": "{{ 6 * 7 }}",
        "Full object": "{{ 6 * 7 }}",
        "Raw spec": "{{ 'x' * 3 }}",
    }


def test_without_mark_unsafe_ansible_renders_jinja_in_cr_strings(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    """Documents every supported ansible-core line: extra vars read from a file are trusted
    templates, so a CR author can make the operator evaluate Jinja (lookups included)."""
    outputs = run_templated(run_playbook, captured[1], mark_unsafe=False)
    # "{{ 6 * 7 }}" becomes 42, the integer (native types since 2.19).
    rendered = 42
    assert outputs == {"Spec parameter": rendered, "Full object": rendered, "Raw spec": "xxx"}


# -- the shipped collection without a cluster ---------------------------------------


class _MetricsAPI(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_osdk_metric_posts_to_the_metrics_api(run_playbook: RunPlaybook) -> None:
    _MetricsAPI.received = []
    server = HTTPServer(("127.0.0.1", 0), _MetricsAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        result = run_playbook("metric", envvars={"PLAYBOOK_OPERATOR_METRICS_URL": url})
    finally:
        server.shutdown()
        server.server_close()
    assert not result.failed, result.failed_tasks
    assert _MetricsAPI.received == [
        {"name": "widgets_total", "description": "Widgets seen", "counter": {"increment": True}}
    ]


def test_osdk_metric_reports_an_unreachable_metrics_api(run_playbook: RunPlaybook) -> None:
    result = run_playbook(
        "metric", envvars={"PLAYBOOK_OPERATOR_METRICS_URL": "http://127.0.0.1:9/metrics"}
    )
    (failed,) = result.failed_tasks
    assert "Cannot reach the metrics API" in failed.message


# -- threads -------------------------------------------------------------------------


def test_concurrent_runs_in_threads_do_not_interfere(
    runner: launch.AnsibleRunner, tmp_path: Path
) -> None:
    environ, cwd = dict(os.environ), os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    results: dict[str, launch.RunResult] = {}
    logger = logging.getLogger("tests.ansible.threads")

    def run(name: str, playbook: str) -> None:
        spec = ansible_spec.RunSpec(
            ident=name,
            private_data_dir=tmp_path / name,
            playbook=PLAYBOOKS / f"{playbook}.yml",
            extravars={},
        )
        results[name] = runner.run(spec, log=logger)

    jobs = {f"cr-{i}": ("failing" if i % 2 else "requeue") for i in range(4)}
    threads = [threading.Thread(target=run, args=item) for item in jobs.items()]
    for thread in threads:
        thread.start()
    run("main-thread", "debug")  # the main thread too: its signal handlers must stay ours
    for thread in threads:
        thread.join(timeout=120)
    for name, playbook in jobs.items():
        result = results[name]
        if playbook == "failing":
            assert [t.task for t in result.failed_tasks] == ["Break it"], (name, result)
        else:
            assert (result.failed, result.requeue_after) == (False, 90.0), (name, result)
    assert results["main-thread"].ok == 1
    assert dict(os.environ) == environ, "os.environ changed"
    assert os.getcwd() == cwd, "the working directory changed"
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers, "signal handlers changed"


def test_extravars_file_holds_plain_json(run_playbook: RunPlaybook, tmp_path: Path) -> None:
    variables = {"frozen": MappingProxyType({"a": {"b": 1}}), "day": date(2030, 1, 2)}
    run_playbook("debug", extravars=variables)
    written = json.loads((tmp_path / "pdd" / "env" / "extravars").read_text())
    assert written == {"frozen": {"a": {"b": 1}}, "day": "2030-01-02"}
    assert oct((tmp_path / "pdd" / "env" / "extravars").stat().st_mode & 0o777) == "0o600"
