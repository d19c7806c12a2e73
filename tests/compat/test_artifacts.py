"""Artifacts where ansible-operator users look for them, and never shared by two runners.

The default runner directory is ansible-operator's, with its layout:
``<runner-dir>/<group>/<version>/<kind>/<namespace>/<name>/artifacts/latest``, no
group directory for core kinds and no namespace directory for cluster-scoped
objects. A second runner process on the same directory gets one of its own.
Nothing there, nor in the log, status or Events, holds a Secret's data a role read.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name
from tests.compat.conftest import Start, logged_lines, raw_lines
from tests.runner.support import PROBE, condition, probe, probe_watches, wait_condition

SECRET = GVK("", "v1", "Secret")
EVENT = GVK("", "v1", "Event")
IN_USE = "runner directory in use by another runner process; using a directory of its own"
#: ansible-operator's runner directory (internal/ansible/runner/runner.go).
DEFAULT_RUNNER_DIR = Path("/tmp/ansible-operator/runner")


def runner_dir_of(proc: OperatorProcess) -> Path:
    """The directory the process runs in: the default unless another runner held it."""
    moved = logged_lines(proc, IN_USE)
    return Path(moved[0]["using"]) if moved else DEFAULT_RUNNER_DIR


def latest_stdout(private_dir: Path) -> Path:
    return private_dir / "artifacts" / "latest" / "stdout"


@pytest.fixture
def knob_name(kube: Client, knob_crd: GVK) -> Iterator[str]:
    name = unique_name("knob")
    yield name
    kube.delete(knob_crd, name=name)


def test_default_runner_dir_has_ansible_operators_layout(
    kube: Client, namespace: str, operators: Start, knob_crd: GVK, knob_name: str
) -> None:
    watches = (
        probe_watches()
        + "- {version: v1, group: '', kind: Secret, role: quiet, manageStatus: false}\n"
        + f"- {{version: v1, group: {knob_crd.group}, kind: Knob, role: quiet, "
        + "manageStatus: false}\n"
    )
    operator = operators(watches, default_runner_dir=True)
    root = runner_dir_of(operator)
    expected = {
        "namespaced custom resource": root / PROBE.group / "v1" / "Probe" / namespace / "p",
        "core kind (no group directory)": root / "v1" / "Secret" / namespace / "s",
        "cluster-scoped object (no namespace directory)": (
            root / knob_crd.group / "v1" / "Knob" / knob_name
        ),
    }
    try:
        assert root.parent == DEFAULT_RUNNER_DIR.parent, root
        kube.create(PROBE, probe("p", namespace, {}), namespace=namespace)
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
        kube.create(SECRET, secret, namespace=namespace)
        knob = {"apiVersion": knob_crd.api_version, "kind": "Knob", "metadata": {"name": knob_name}}
        kube.create(knob_crd, knob)
        for what, private_dir in expected.items():
            stdout = latest_stdout(private_dir)
            operator.eventually(
                stdout.is_file, describe=f"artifacts of the {what} at {stdout}", timeout=90
            )
    finally:
        for private_dir in expected.values():
            # The namespace directory too, where there is one: it is the test's own.
            mine = private_dir.parent if namespace == private_dir.parent.name else private_dir
            shutil.rmtree(mine, ignore_errors=True)


def test_two_runners_never_share_a_runner_dir(
    kube: Client, namespace: str, operators: Start, tmp_path: Path
) -> None:
    shared = tmp_path / "runner"
    first = operators(probe_watches(), runner_dir=shared)
    second = operators(probe_watches(), runner_dir=shared)
    moved = logged_lines(second, IN_USE)
    assert moved and moved[0]["wanted"] == str(shared), (
        f"expected the second runner to say {shared} is in use; its log:\n{second.tail()}"
    )
    own = Path(moved[0]["using"])
    assert own != shared and own.parent == shared.parent, f"second runner uses {own}"
    assert not logged_lines(first, IN_USE), f"the first runner moved:\n{first.tail()}"

    kube.create(PROBE, probe("both", namespace, {}), namespace=namespace)
    for proc, root in ((first, shared), (second, own)):
        stdout = latest_stdout(root / PROBE.group / "v1" / "Probe" / namespace / "both")
        proc.eventually(stdout.is_file, describe=f"its own artifacts at {stdout}", timeout=90)


def test_secret_data_a_failing_role_read_stays_out_of_logs_status_events_and_artifacts(
    kube: Client, namespace: str, operators: Start, tmp_path: Path
) -> None:
    value = f"s3cret-{unique_name('value')}"
    encoded = base64.b64encode(value.encode()).decode()
    runner_dir = tmp_path / "runner"
    operator = operators(
        "- {version: v1, group: " + PROBE.group + ", kind: Probe, role: secret_reader}\n",
        runner_dir=runner_dir,
        env={"OPERATOR_API_KEY": f"{value}-env"},  # the runs' environment: no artifact
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "leaky-credentials"},
        "data": {"password": encoded},
        "stringData": {"token": f"{value}-token"},
    }
    kube.create(SECRET, secret, namespace=namespace)
    kube.create(PROBE, probe("leaky", namespace, {}), namespace=namespace)
    obj = wait_condition(
        kube, namespace=namespace, name="leaky", kind="Failure", status="True", operator=operator
    )
    failure = condition(obj, "Failure") or {}
    assert "refusing to go on with 1 Secret" in str(failure.get("message")), failure
    private_dir = runner_dir / PROBE.group / "v1" / "Probe" / namespace / "leaky"
    operator.eventually(
        (private_dir / "artifacts" / "latest" / "status").is_file,
        describe="the run's artifacts written",
    )
    stdout = (private_dir / "artifacts" / "latest" / "stdout").read_text()
    assert "leaky-credentials" in stdout, f"the Secret was read and shown, redacted:\n{stdout}"

    places = {
        "the runner's log": "\n".join(raw_lines(operator)),
        "the CR's status": json.dumps(obj.get("status")),
        "the CR's Events": json.dumps(
            [
                e
                for e in kube.list(EVENT, namespace=namespace)["items"]
                if e["involvedObject"].get("name") == "leaky"
            ]
        ),
    }
    for path in sorted(runner_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            places[str(path.relative_to(runner_dir))] = path.read_text(errors="replace")
    token = base64.b64encode(f"{value}-token".encode()).decode()
    for needle in (value, encoded, token, f"{value}-env"):
        leaks = [where for where, text in places.items() if needle in text]
        assert leaks == [], f"the Secret's data ({needle}) is in: {leaks}"
