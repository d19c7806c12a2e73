"""Every run says why it ran, end to end: a real operator on the embedded cluster.

Each trigger — created, spec changed, a child deleted, a failure's retry, the role's
requeue_after — shows in the Running condition's message, in the run's
``trigger.json`` artifact, in ``playbook_operator_runs_total{trigger}``, in the
runs' log lines and in ``playbook-operator runs``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner import cli
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from tests.runner.support import PROBE, StartOperator, condition, probe, probe_watches

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")


def runs_of(
    operator: OperatorProcess, name: str, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    """``playbook-operator runs probe/<name> -o json`` over the operator's runner dir."""
    capsys.readouterr()
    runner_dir = f"--runner-dir={operator.workdir / 'runner'}"
    cli.main(["runs", f"probe/{name}", "-n", operator.namespace, "-o", "json", runner_dir])
    return list(json.loads(capsys.readouterr().out or "[]"))


def running_message(kube: Client, operator: OperatorProcess, *, name: str, want: str) -> None:
    """Wait until a (slow) run of ``name`` shows Running=True, reason Running, ``want``."""

    def observe() -> dict[str, Any] | None:
        obj = kube.get(PROBE, name=name, namespace=operator.namespace)
        return condition(obj, "Running")

    operator.eventually(
        observe,
        until=lambda c: bool(c and c.get("reason") == "Running" and c.get("message") == want),
        describe=f"Running=True on {name} with reason Running and message {want!r}",
        timeout=60,
    )


def trigger_runs(operator: OperatorProcess, trigger: str) -> float:
    return operator.metric("playbook_operator_runs_total", kind="Probe", trigger=trigger)


def test_each_run_names_its_trigger(
    kube: Client,
    namespace: str,
    start_operator: StartOperator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    operator = start_operator(probe_watches())
    spec = {"message": "first", "slow_seconds": 2}
    kube.create(PROBE, probe("a", namespace, spec), namespace=namespace)
    running_message(kube, operator, name="a", want="Running reconciliation (created)")
    operator.eventually(
        lambda: trigger_runs(operator, "created"), until=lambda n: n == 1, describe="a created run"
    )

    kube.patch(PROBE, name="a", namespace=namespace, body={"spec": {"message": "second"}})
    running_message(
        kube, operator, name="a", want="Running reconciliation (spec changed: generation 2)"
    )
    operator.eventually(
        lambda: trigger_runs(operator, "generation"),
        until=lambda n: n == 1,
        describe="a spec-changed run",
    )

    kube.delete(CONFIGMAP, name="a-echo", namespace=namespace)
    running_message(
        kube,
        operator,
        name="a",
        want=f"Running reconciliation (dependent changed: ConfigMap {namespace}/a-echo deleted)",
    )
    operator.eventually(
        lambda: trigger_runs(operator, "dependent"),
        until=lambda n: n >= 1,
        describe="a run for the deleted child",
    )

    slow = {"slow_seconds": 2}
    kube.create(PROBE, probe("f", namespace, {"should_fail": True, **slow}), namespace=namespace)
    kube.create(PROBE, probe("r", namespace, {"requeue": "1s", **slow}), namespace=namespace)
    retry = "Running reconciliation (retry after failure: attempt 1)"
    running_message(kube, operator, name="f", want=retry)
    running_message(
        kube, operator, name="r", want="Running reconciliation (requeue_after: after 1s)"
    )
    operator.eventually(
        lambda: (trigger_runs(operator, "retry"), trigger_runs(operator, "requeue_after")),
        until=lambda counts: counts[0] >= 1 and counts[1] >= 1,
        describe="a retry of f and a requeue_after run of r",
    )
    failed = operator.metric(
        "playbook_operator_runs_total", kind="Probe", trigger="created", result="failed"
    )
    assert failed == 1, f"expected f's first run counted created/failed, saw {failed}"

    a_runs = runs_of(operator, "a", capsys)
    triggers = [run["trigger"] for run in reversed(a_runs)]
    want = [
        "created",
        "spec changed: generation 2",
        f"dependent changed: ConfigMap {namespace}/a-echo deleted",
    ]
    assert triggers[:3] == want, f"expected a's runs {want}, `runs` listed {a_runs}"
    assert all(run["result"] == "succeeded" and run["seconds"] for run in a_runs), a_runs
    f_runs = runs_of(operator, "f", capsys)
    assert [r["trigger"] for r in reversed(f_runs)][:2] == [
        "created",
        "retry after failure: attempt 1",
    ], f_runs
    finished = next(run for run in f_runs if run["result"] == "failed")
    assert finished["failed_task"] == "Fail when asked to", f"`runs` listed {finished}"
    r_runs = runs_of(operator, "r", capsys)
    assert any(run["trigger"] == "requeue_after: after 1s" for run in r_runs), r_runs

    record = Path(operator.workdir / "runner").glob(f"**/{namespace}/a/artifacts/*/trigger.json")
    assert any(json.loads(p.read_text())["trigger"]["kind"] == "generation" for p in record), (
        "expected a trigger.json artifact naming the spec change"
    )
    logged = {
        line.get("trigger")
        for line in list(operator.lines)
        if line.get("msg") == "Ansible-runner exited successfully" and line.get("name") == "a"
    }
    assert {"created", "spec changed: generation 2"} <= logged, (
        f"expected a's run lines to carry their trigger, saw {logged}"
    )
    # ansible-operator's fields on its line: job (the artifacts' ident), name, namespace.
    jobs = {
        line.get("job")
        for line in list(operator.lines)
        if line.get("msg") == "Ansible-runner exited successfully"
        and (line.get("name"), line.get("namespace")) == ("a", namespace)
        and line.get("gvk") == str(PROBE)
    }
    assert {run["ident"] for run in a_runs} <= jobs, (
        f"expected each of a's runs logged with job=<its artifacts' ident>, saw {jobs}"
    )
