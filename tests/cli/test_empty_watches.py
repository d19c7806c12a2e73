"""A runner whose watches.yaml has no entries yet (a new project) starts, serves and stops.

``playbook-operator init`` writes such a file and ``make run`` (``run --dev``) starts it
before ``create api`` adds the first kind, as operator-sdk's ansible-operator starts
with nothing to reconcile.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import devcluster
from runner import cli
from runner.kube.client import Client
from testkit.harness import OperatorProcess
from tests.runner.support import (
    PROBE,
    StartOperator,
    probe,
    probe_watches,
    wait_condition,
)

pytestmark = pytest.mark.integration

INIT_WATCHES = (
    Path(__file__).parents[2]
    / "runner"
    / "tools"
    / "scaffold"
    / "templates"
    / "init"
    / "watches.yaml"
)
NOTHING_TO_WATCH = (
    "nothing to watch: watches.yaml has no entries; add one with 'playbook-operator create api'"
)


def status_of(operator: OperatorProcess, endpoint: str, path: str) -> int:
    address = operator.address(endpoint)
    assert address, f"no {endpoint} endpoint logged; log tail:\n{operator.tail()}"
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def warnings_of(operator: OperatorProcess) -> list[str]:
    return [str(line.get("msg")) for line in list(operator.lines) if line.get("level") == "warn"]


@pytest.mark.parametrize(
    ("watches", "args"),
    [
        pytest.param(INIT_WATCHES.read_text(encoding="utf-8"), (), id="init-template"),
        pytest.param("[]\n", (), id="empty-list"),
        pytest.param("", ("--dev",), id="empty-file-dev"),
    ],
)
def test_no_watches_is_ready_and_stops_on_sigterm(
    start_operator: StartOperator, watches: str, args: tuple[str, ...]
) -> None:
    # start_operator returns once the runner logged 'started' and /readyz answered 200.
    operator = start_operator(watches, args=args)

    seen = {path: status_of(operator, "health", path) for path in ("/healthz", "/readyz")}
    assert seen == {"/healthz": 200, "/readyz": 200}, f"expected both 200, saw {seen}"
    exposition = operator.metrics()  # asserts a 200
    assert "# TYPE " in exposition, f"expected metric families, saw:\n{exposition[:300]}"
    warned = warnings_of(operator)
    assert warned.count(NOTHING_TO_WATCH) == 1, (
        f"expected the warning {NOTHING_TO_WATCH!r} once, saw warnings {warned}"
    )

    code = operator.stop(timeout=60)

    assert code == 0, f"expected exit code 0 after SIGTERM, saw {code}; log:\n{operator.tail()}"
    assert operator.logged("stopped", clean=True), (
        f"expected a clean 'stopped' line; log tail:\n{operator.tail()}"
    )


def test_dev_mode_starts_watching_the_first_entry(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    """A new project's make run, then create api: the watches.yaml edit restarts the runner."""
    operator = start_operator("", args=("--dev",))

    (operator.workdir / "watches.yaml").write_text(probe_watches())

    operator.eventually(
        lambda: operator.logged("started", watches=[str(PROBE)]),
        describe=f"the runner to start again watching {PROBE}",
        timeout=120,
    )
    kube.create(PROBE, probe("first", namespace, {"message": "hi"}), namespace=namespace)
    wait_condition(
        kube,
        namespace=namespace,
        name="first",
        kind="Successful",
        status="True",
        operator=operator,
        timeout=120,
    )


def test_fresh_projects_make_run_starts_the_runner(
    cluster: devcluster.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make run`` right after ``init``: no API yet, and the runner is started with --dev.

    The project's Makefile runs a stand-in ``playbook-operator`` (RUNTIME_BIN) that
    records its arguments: the runner itself is the subject of the tests above.
    """
    project = tmp_path / "fresh-operator"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init", "--domain", "fresh.playbook-operator.test"]) == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = tmp_path / "argv"
    stand_in = bin_dir / "playbook-operator"
    stand_in.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(recorded))}\n')
    stand_in.chmod(0o755)

    done = subprocess.run(
        ["make", "--no-print-directory", "run", f"RUNTIME_BIN={bin_dir}", f"PY={sys.executable}"],
        cwd=project,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, (
        f"expected make run to start the runner, saw exit {done.returncode}:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
    argv = recorded.read_text().split()
    expected = ["run", "--watches-file=./watches.yaml", "--dev"]
    assert [arg for arg in argv if arg in expected] == expected, (
        f"expected the runner started with {expected}, saw {argv}"
    )


def test_dev_mode_names_a_new_kind_whose_crd_is_not_installed(
    start_operator: StartOperator,
) -> None:
    """create api while make run runs, before make install: the runner stops and says why."""
    operator = start_operator("", args=("--dev",))

    (operator.workdir / "watches.yaml").write_text(
        "- {version: v1, group: absent.playbook-operator.test, kind: Nope, role: probe}\n"
    )

    code = operator.eventually(
        lambda: operator.returncode,
        until=lambda code: code is not None,
        describe="the runner to exit after the restart",
        timeout=120,
    )
    assert code == 2, f"expected exit code 2 (invalid configuration), saw {code}"
    expected = (
        "playbook-operator: invalid configuration: watches.yaml: the cluster does not serve "
        "Nope in absent.playbook-operator.test/v1: install its CRD first (make install)"
    )
    assert expected in operator.raw, f"expected the line {expected!r}; log tail:\n{operator.tail()}"
