"""A restart without a storm, on the embedded cluster: after a restart, a CR that succeeded
at its generation and whose children did not change waits its turn in the window; a CR
changed while the runner was away, one whose child changed, a new one, one whose role
changed, and one whose runs the proxy never saw (``--inject-owner-ref=false``) run at
once; with a window of 0 everything runs at once, as upstream."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from runner.reconcile import startup
from testkit.harness import FIXTURES, OperatorProcess
from testkit.helpers import wait_for
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")


def settle(operator: OperatorProcess, kube: Client, namespace: str, names: list[str]) -> None:
    """Wait until each CR succeeded with its children recorded, then stop the runner."""
    for name in names:
        wait_condition(
            kube,
            namespace=namespace,
            name=name,
            kind="Successful",
            status="True",
            operator=operator,
        )
        obj = kube.get(PROBE, name=name, namespace=namespace)
        kept = (obj.get("status") or {}).get(startup.STATUS_FIELD)
        assert isinstance(kept, dict) and kept.get("objects"), (
            f"expected status.{startup.STATUS_FIELD} to name {name}'s children, saw {kept!r}"
        )
    operator.stop()


def runs_of(operator: OperatorProcess, name: str) -> int:
    """Runs of one CR: the 'Ansible-runner exited successfully' lines bound to it."""
    return sum(
        1
        for line in list(operator.lines)
        if line.get("msg") == "Ansible-runner exited successfully" and line.get("name") == name
    )


def test_changed_new_and_drifted_crs_run_at_once_unchanged_ones_wait(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    first = start_operator(probe_watches())
    for name in ("same", "spec", "drift"):
        kube.create(PROBE, probe(name, namespace, {"message": name}), namespace=namespace)
    settle(first, kube, namespace, ["same", "spec", "drift"])

    # While the runner is away: a spec change, a child's change, a new CR.
    kube.patch(PROBE, name="spec", namespace=namespace, body={"spec": {"message": "v2"}})
    kube.patch(
        CONFIGMAP, name="drift-echo", namespace=namespace, body={"data": {"message": "tampered"}}
    )
    kube.create(PROBE, probe("new", namespace, {"message": "new"}), namespace=namespace)

    second = start_operator(probe_watches(), args=("--startup-resync-window=10m",))
    for name in ("spec", "drift", "new"):
        second.eventually(
            lambda name=name: runs_of(second, name),  # type: ignore[misc]
            describe=f"{name} to run at once after the restart",
            timeout=60,
        )
    repaired = kube.get(CONFIGMAP, name="drift-echo", namespace=namespace)
    assert repaired["data"] == {"message": "drift"}, f"drift not repaired: {repaired['data']}"
    assert runs_of(second, "same") == 0, (
        f"expected 'same' to wait in the 10m window, it ran:\n{second.tail()}"
    )
    assert second.logged("spreading the first runs of unchanged CRs"), second.tail()
    assert line_of(second, "first run deferred", f"{namespace}/same"), second.tail()


def test_an_unchanged_cr_runs_within_the_window_not_at_once(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    first = start_operator(probe_watches())
    kube.create(PROBE, probe("quiet", namespace, {"message": "q"}), namespace=namespace)
    settle(first, kube, namespace, ["quiet"])

    # A 20 s window keeps its first 2 s for the CRs that must run now.
    second = start_operator(probe_watches(), args=("--startup-resync-window=20s",))
    deferred = second.eventually(
        lambda: line_of(second, "first run deferred", f"{namespace}/quiet"),
        describe="the unchanged CR's first run to be deferred",
        timeout=10,
    )
    assert 2.0 <= deferred["delay_seconds"] <= 20.0, f"delay outside the window: {deferred}"
    ran = second.eventually(
        lambda: line_of(second, "Ansible-runner exited successfully", "quiet"),
        describe="the spread run within the window",
        timeout=40,
    )
    waited = stamp(ran) - stamp(deferred)
    assert 2.0 <= waited <= 25.0, f"expected the run 2-20 s after the deferral, it came {waited}s"


def line_of(operator: OperatorProcess, prefix: str, target: str) -> dict[str, Any]:
    """The first log line whose msg starts with ``prefix`` about ``target`` (object or name);
    empty if none."""
    for line in list(operator.lines):
        about = (line.get("object"), line.get("name"))
        if str(line.get("msg", "")).startswith(prefix) and target in about:
            return line
    return {}


def stamp(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(line["ts"]).replace("Z", "+00:00")).timestamp()


def test_a_window_of_zero_runs_everything_at_once(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    first = start_operator(probe_watches())
    kube.create(PROBE, probe("now", namespace, {"message": "n"}), namespace=namespace)
    settle(first, kube, namespace, ["now"])

    second = start_operator(probe_watches(), args=("--startup-resync-window=0",))
    wait_for(
        lambda: runs_of(second, "now"),
        describe=f"with window 0, the CR to run at once:\n{second.tail()}",
        timeout=30,
    )


def test_a_changed_role_file_runs_the_cr_at_once(
    kube: Client, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    roles = tmp_path / "roles"
    shutil.copytree(FIXTURES / "roles", roles)
    env = {"ANSIBLE_ROLES_PATH": str(roles)}
    first = start_operator(probe_watches(), env=env)
    kube.create(PROBE, probe("edited", namespace, {"message": "e"}), namespace=namespace)
    settle(first, kube, namespace, ["edited"])

    # While the runner is away the role changes (a new image would bring it): the CR's
    # spec and children are as its last run left them, but that run proves nothing now.
    tasks = roles / "probe" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "# edited while the runner was away\n")

    second = start_operator(probe_watches(), args=("--startup-resync-window=10m",), env=env)
    second.eventually(
        lambda: runs_of(second, "edited"),
        describe="the CR whose role changed to run at once after the restart",
        timeout=60,
    )
    why = line_of(second, "first run not deferred", f"{namespace}/edited")
    assert "content" in str(why.get("reason")), (
        f"expected the reason to name the role's content, saw {why or second.tail()}"
    )
    assert not line_of(second, "first run deferred", f"{namespace}/edited"), second.tail()


def test_without_the_proxy_nothing_proves_a_cr_unchanged(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    no_proxy = ("--inject-owner-ref=false",)
    first = start_operator(probe_watches(), args=no_proxy)
    kube.create(PROBE, probe("direct", namespace, {"message": "d"}), namespace=namespace)
    wait_condition(
        kube, namespace=namespace, name="direct", kind="Successful", status="True", operator=first
    )
    kept = (kube.get(PROBE, name="direct", namespace=namespace).get("status") or {}).get(
        startup.STATUS_FIELD
    )
    assert kept is None, f"expected no record from a run the proxy never saw, saw {kept!r}"
    first.stop()

    second = start_operator(probe_watches(), args=(*no_proxy, "--startup-resync-window=10m"))
    second.eventually(
        lambda: runs_of(second, "direct"),
        describe="the CR without a record to run at once after the restart",
        timeout=60,
    )
