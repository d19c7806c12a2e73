"""The Memcached operator's webhook roles, run by ansible-playbook without the runtime.

roles/memcached_validate (the validating webhook) and roles/memcached_default (the
defaulting webhook) get the extra vars the runtime gives an admission run: the reconcile's
(runner.ansible.extravars.build, CR strings marked unsafe) plus ansible_operator_admission.
A validation is allowed when the play succeeds and denied with the failed task's message;
a defaulting run answers with the object its admission task returns (read here from the
task's result, as the runtime reads it). No cluster is needed: the roles never talk to one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from devcluster import binaries
from runner.ansible import extravars
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from runner.tools.scaffold import devhooks
from testkit.harness import OperatorProcess
from tests.memcached.conftest import MEMCACHED, watches

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "runner" / "collection"
ADMISSION = "playbook_operator.util.admission"


def memcached(
    spec: dict[str, Any], *, name: str = "cache", namespace: str = "shop"
) -> dict[str, Any]:
    return {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": name, "namespace": namespace, "uid": "u-1", "generation": 1},
        "spec": spec,
    }


@dataclass(frozen=True)
class Outcome:
    """One admission run: ``denied`` with ``reason``, or allowed; ``admitted`` is the
    object given to the admission task (None when the role did not call it)."""

    denied: bool
    reason: str
    admitted: dict[str, Any] | None


def admit(
    role: str,
    obj: dict[str, Any],
    *,
    tmp_path: Path,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
) -> Outcome:
    """Run ``role`` over ``obj`` as the runtime runs an admission (one ansible-playbook)."""
    built = extravars.build(
        obj=obj,
        gvk=GVK.of(obj),
        snake_case=True,
        mark_unsafe=True,
        watch_vars={},
        finalizer_vars=None,
    )
    variables = {
        **built.variables,
        "ansible_operator_admission": {
            "operation": operation,
            "old_object": extravars.mark_unsafe(old),
            "user_info": {"username": "alice"},
            "dry_run": False,
            "uid": "req-1",
        },
    }
    (tmp_path / "extravars.json").write_text(json.dumps(variables))
    (tmp_path / "play.yml").write_text(
        f"- hosts: localhost\n  gather_facts: false\n  roles: [{role}]\n"
    )
    env = {
        **os.environ,
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
    }
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"@{tmp_path / 'extravars.json'}",
            str(tmp_path / "play.yml"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"expected ansible-playbook's JSON report, saw:\n{done.stdout}\n{done.stderr}"
        ) from None
    reason, admitted = "", None
    for task in report["plays"][0]["tasks"]:
        result = task["hosts"].get("localhost", {})
        if result.get("failed"):
            reason = str(result.get("msg", ""))
        named = str(task["task"]["name"]).endswith("Return the Memcached with its defaults")
        if named and not result.get("skipped"):
            # What the runtime reads (runner.webhook.hooks); ansible-core 2.21's json
            # callback no longer shows the module's invocation.
            admitted = result["admission"]["object"]
    denied = done.returncode != 0
    assert not denied or reason, f"expected a failed task's message, saw:\n{done.stdout}"
    return Outcome(denied=denied, reason=reason, admitted=admitted)


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        pytest.param({"size": 3}, "", id="empty-spec-uses-role-defaults"),
        pytest.param({"version": "1.6.38-alpine", "maxConnections": 1024}, "", id="default-sample"),
        pytest.param({"version": "1.6.99-never-ready"}, "", id="test-variant-tag"),
        pytest.param(
            {"version": "1.5.22"},
            'spec.version "1.5.22" is not a version this operator supports',
            id="old-memcached",
        ),
        pytest.param(
            {"version": "latest"},
            'spec.version "latest" is not a version this operator supports',
            id="floating-tag",
        ),
        pytest.param(
            {"version": "{{ lookup('env', 'HOME') }}"},
            "spec.version \"{{ lookup('env', 'HOME') }}\" is not a version",
            id="jinja-in-version-is-data",
        ),
        pytest.param(
            {"autoscaling": {"minSize": 5, "maxSize": 3, "targetConnectionsPerPod": 100}},
            "spec.autoscaling.minSize (5) cannot exceed spec.autoscaling.maxSize (3)",
            id="autoscaling-min-above-max",
        ),
        pytest.param(
            {"autoscaling": {"maxSize": 3, "targetCPUUtilization": 80}},
            "",
            id="autoscaling-cpu-with-default-request",
        ),
        pytest.param(
            {
                "autoscaling": {"maxSize": 3, "targetCPUUtilization": 80},
                "resources": {"limits": {"memory": "256Mi"}},
            },
            "spec.autoscaling.targetCPUUtilization needs a CPU request",
            id="autoscaling-cpu-without-request",
        ),
        pytest.param(
            {"maxConnections": 4096},
            "the memory limit (128Mi, 128.0 MiB) cannot hold 96 MiB of items "
            "(spec.memoryLimitMB), plus 4096 connections (spec.maxConnections) at 16 KiB "
            "each, plus 8 MiB for memcached itself: 168 MiB",
            id="connections-overflow-default-limit",
        ),
        pytest.param(
            {"memoryLimitMB": 120},
            "cannot hold 120 MiB of items",
            id="item-memory-leaves-no-room",
        ),
        pytest.param(
            {
                "maxConnections": 4096,
                "memoryLimitMB": 400,
                "resources": {"limits": {"memory": "512Mi"}},
            },
            "",
            id="monitored-sample",
        ),
        pytest.param(
            {"maxConnections": 100000, "resources": {"requests": {"cpu": "50m"}}},
            "",
            id="no-memory-limit-nothing-to-fit",
        ),
    ],
)
def test_validate(spec: dict[str, Any], reason: str, tmp_path: Path) -> None:
    outcome = admit("memcached_validate", memcached(spec), tmp_path=tmp_path)
    if reason:
        assert outcome.denied and reason in outcome.reason, (
            f"expected denied with {reason!r}, saw denied={outcome.denied} {outcome.reason!r}"
        )
    else:
        assert not outcome.denied, f"expected allowed, saw denied with {outcome.reason!r}"


def test_validate_update_sees_new_object(tmp_path: Path) -> None:
    """An UPDATE is judged on the new object (the old one valid or not)."""
    old = memcached({"version": "1.6.38-alpine"})
    outcome = admit(
        "memcached_validate",
        memcached({"version": "2.0.0"}),
        tmp_path=tmp_path,
        operation="UPDATE",
        old=old,
    )
    assert outcome.denied and 'spec.version "2.0.0"' in outcome.reason, outcome


@pytest.mark.parametrize(
    "role", [pytest.param("memcached_validate"), pytest.param("memcached_default")]
)
def test_update_leaving_the_spec_alone_is_admitted(role: str, tmp_path: Path) -> None:
    """A Memcached stored before a rule existed keeps its metadata writable (finalizers,
    so that it can be deleted): an UPDATE with the old spec is neither judged nor changed."""
    spec = {"maxConnections": 4096}  # refused by the memory rule, defaulted memoryLimitMB
    old = memcached(spec)
    new = {**old, "metadata": {**old["metadata"], "finalizers": []}}
    outcome = admit(role, new, tmp_path=tmp_path, operation="UPDATE", old=old)
    assert outcome == Outcome(denied=False, reason="", admitted=None), (
        f"expected the update admitted unchanged, saw {outcome}"
    )


@pytest.mark.parametrize(
    ("spec", "defaulted"),
    [
        pytest.param({}, {"memoryLimitMB": 96}, id="item-memory-from-default-limit"),
        pytest.param(
            {"resources": {"limits": {"memory": "1Gi"}}},
            {"memoryLimitMB": 768, "resources": {"limits": {"memory": "1Gi"}}},
            id="item-memory-from-given-limit",
        ),
        pytest.param(
            {"resources": {"requests": {"cpu": "10m"}}},
            {"memoryLimitMB": 64, "resources": {"requests": {"cpu": "10m"}}},
            id="item-memory-without-limit",
        ),
        pytest.param(
            {"autoscaling": {"maxSize": 4, "targetCPUUtilization": 70}},
            {
                "memoryLimitMB": 96,
                "autoscaling": {"minSize": 1, "maxSize": 4, "targetCPUUtilization": 70},
            },
            id="autoscaling-min-size",
        ),
        pytest.param({"memoryLimitMB": 50}, None, id="nothing-to-default"),
    ],
)
def test_default(spec: dict[str, Any], defaulted: dict[str, Any] | None, tmp_path: Path) -> None:
    obj = memcached(spec)
    outcome = admit("memcached_default", obj, tmp_path=tmp_path)
    assert not outcome.denied, f"expected allowed, saw denied with {outcome.reason!r}"
    if defaulted is None:
        assert outcome.admitted is None, f"expected no admission call, saw {outcome.admitted}"
        return
    assert outcome.admitted == {**obj, "spec": defaulted}, (
        f"expected the Memcached with spec {defaulted}, saw {outcome.admitted}"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.integration
@pytest.mark.usefixtures("memcached_crd")
def test_make_run_wiring_serves_the_roles(
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """make run's wiring (devhooks: a certificate, configurations with a url) and
    a real runner: the API server denies a Memcached with the role's message and stores
    one with the defaulted item memory. Scoped to the test's namespace."""
    kubectl = binaries.resolve(binaries.KUBECTL, bin_dir=cluster.bin_dir)
    monkeypatch.setenv("KUBECTL", str(kubectl))
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    entries = yaml.safe_load(watches())
    for entry in entries:
        if entry["kind"] == "Memcached":
            entry["validation"] = {"role": "memcached_validate", "timeoutSeconds": 10}
            entry["mutation"] = {"role": "memcached_default", "timeoutSeconds": 10}
    watches_text = yaml.safe_dump(entries, sort_keys=False)
    (tmp_path / "watches.yaml").write_text(watches_text)
    port, certs, name = _free_port(), tmp_path / "certs", f"{namespace}-make-run"
    operator = OperatorProcess(
        workdir=tmp_path,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=watches_text,
        args=(f"--webhook-port={port}", "--webhook-host=127.0.0.1", f"--webhook-cert-dir={certs}"),
        env={"ANSIBLE_ROLES_PATH": str(ROOT / "roles"), "ENABLE_WEBHOOKS": "true"},
    )
    try:
        devhooks.up(
            watches_file=tmp_path / "watches.yaml",
            cert_dir=certs,
            port=port,
            name=name,
            namespace=namespace,
        )
        operator.start()
        with pytest.raises(kube_errors.ApiError) as denied:
            kube.create(
                MEMCACHED,
                memcached({"version": "latest"}, name="bad", namespace=namespace),
                namespace=namespace,
            )
        said = json.dumps(denied.value.body)
        assert 'spec.version \\"latest\\" is not a version this operator supports' in said, (
            f"expected the role's reason in the API server's answer, saw {said}"
        )
        stored = kube.create(
            MEMCACHED, memcached({"size": 0}, name="good", namespace=namespace), namespace=namespace
        )
        assert stored["spec"].get("memoryLimitMB") == 96, (
            f"expected memoryLimitMB 96 defaulted into the stored spec, saw {stored['spec']}"
        )
    finally:
        devhooks.down(cert_dir=certs)
        operator.stop()
    left = cluster.kubectl(
        "get",
        "validatingwebhookconfiguration,mutatingwebhookconfiguration",
        "-l",
        f"{devhooks.LABEL}={name}",
        "-o",
        "name",
    )
    assert not left.stdout.strip(), f"expected make run's configurations gone, saw {left.stdout}"
