"""The RBAC a role needs, learned from its runs, on the embedded cluster.

The runner runs under a ServiceAccount's token whose Role lacks ``deployments
patch``; the role creates a ConfigMap and patches a Deployment. The denied patch is
named in the CR's Failure condition; ``playbook-operator rbac`` on the runner's
``/debug/rbac`` prints exactly the ConfigMap and Deployment rules plus the CR's own,
reports the denied patch as denied and not granted, and a rule for a kind nobody
touches as unused; ``--write`` leaves the denied patch out, ``--grant-denied`` writes
it once the author says yes at a terminal, and after applying that file the run
succeeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from devcluster import accounts
from runner import cli
from runner.kube.client import Client
from runner.kube.types import GVK
from runner.tools.rbac import command
from testkit import harness
from tests.runner.support import PROBE, StartOperator, probe, wait_condition

pytestmark = pytest.mark.integration

ROLE = GVK("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "RoleBinding")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
ROOT = Path(__file__).resolve().parents[2]

TASKS = """\
- name: Create the ConfigMap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-settings"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        size: "1"

- name: Label the web Deployment
  kubernetes.core.k8s:
    state: patched
    kind: Deployment
    api_version: apps/v1
    name: web
    namespace: "{{ ansible_operator_meta.namespace }}"
    definition:
      metadata:
        labels:
          probed: "yes"
"""

# What the runner and the role need, but deployments patch; and secrets, which nothing reads.
GRANTED = [
    (PROBE.group, "probes", ["get", "list", "watch", "patch"]),
    (PROBE.group, "probes/status", ["patch"]),
    (PROBE.group, "probes/finalizers", ["update"]),
    ("", "configmaps", ["get", "list", "watch", "create", "patch"]),
    ("", "events", ["create"]),
    ("apps", "deployments", ["get"]),
    ("", "secrets", ["get"]),
]


def role_document(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "manager-role"},
        "rules": [
            {"apiGroups": [group], "resources": [resource], "verbs": verbs}
            for group, resource, verbs in GRANTED
        ],
    }


def web_deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "registry.invalid/web:1"}]},
            },
        },
    }


def rbac_command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", "rbac", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def operator_account(
    cluster: devcluster.Cluster, kube: Client, namespace: str, tmp_path: Path
) -> Path:
    """A kubeconfig of ServiceAccount ``operator``, bound to the Role of ``role.yaml``."""
    role_file = tmp_path / "role.yaml"
    role_file.write_text(yaml.safe_dump(role_document(namespace), sort_keys=False))
    kube.create(ROLE, yaml.safe_load(role_file.read_text()), namespace=namespace)
    accounts.ensure(cluster, namespace=namespace, name="operator")
    kube.create(
        ROLE_BINDING,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "manager-rolebinding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "manager-role",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": namespace}],
        },
        namespace=namespace,
    )
    return accounts.write_kubeconfig(
        cluster, namespace=namespace, name="operator", path=tmp_path / "operator.kubeconfig"
    )


def test_denied_patch_is_named_then_learned_and_written(  # noqa: PLR0917 (fixtures)
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    tmp_path: Path,
    start_operator: StartOperator,
    operator_account: Path,
) -> None:
    roles = tmp_path / "roles"
    (roles / "learner" / "tasks").mkdir(parents=True)
    (roles / "learner" / "tasks" / "main.yml").write_text(TASKS)
    kube.create(DEPLOYMENT, web_deployment(), namespace=namespace)
    watches = f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: learner\n"
    operator = start_operator(
        watches,
        args=(f"--kubeconfig={operator_account}",),
        env={"ANSIBLE_ROLES_PATH": str(roles)},
    )
    kube.create(PROBE, probe("p1", namespace, {}), namespace=namespace)

    failed = wait_condition(
        kube, namespace=namespace, name="p1", kind="Failure", status="True", operator=operator
    )
    message = next(c for c in failed["status"]["conditions"] if c["type"] == "Failure")["message"]
    needs = f"needs: apps deployments patch in namespace {namespace}"
    assert needs in message, f"expected {needs!r} in the Failure message, saw {message!r}"
    denied = operator.metric(
        "playbook_operator_api_requests_denied_total",
        group="apps",
        resource="deployments",
        verb="patch",
    )
    assert denied >= 1, f"expected the denied patch counted, saw {denied}"

    # A second run meets the ConfigMap the first created: the role's update path (patch).
    operator.eventually(operator.runs, until=lambda n: n >= 2, describe="a second run")
    address = operator.address("metrics")
    code, body = harness.scrape(f"http://{address}/debug/rbac")
    assert code == 200, f"expected GET /debug/rbac to answer 200, saw {code}: {body[:200]}"
    record = tmp_path / "record.json"
    record.write_text(body)
    denials = json.loads(body)["watches"][0]["denied"]
    tasks = {d["task"] for d in denials if d["resource"] == "deployments"}
    assert tasks == {"Label the web Deployment"}, f"expected the patching task, saw {tasks}"

    kubeconfig = f"--kubeconfig={cluster.kubeconfig}"
    shown = rbac_command(
        "--from", str(record), "--role-file", "role.yaml", kubeconfig, cwd=tmp_path
    )
    assert shown.returncode == 0, f"rbac failed: {shown.stderr}"
    derived = yaml.safe_load(shown.stdout)
    resources = [(r["apiGroups"][0], r["resources"][0]) for r in derived["rules"]]
    expected = [
        ("", "configmaps"),
        ("", "events"),
        ("apps", "deployments"),
        (PROBE.group, "probes"),
        (PROBE.group, "probes/finalizers"),
        (PROBE.group, "probes/status"),
    ]
    assert resources == expected, f"expected the two rules plus the CR's own, saw {resources}"
    deployments = next(r for r in derived["rules"] if r["resources"] == ["deployments"])
    assert deployments["verbs"] == ["get"], f"deployments: {deployments['verbs']}"
    assert "# unused in role.yaml: core secrets get" in shown.stdout, shown.stdout
    reported = (
        f"# denied, not granted: apps deployments patch in namespace {namespace} for Probe "
        "(task 'Label the web Deployment'); it would need Role manager-role: "
        "apiGroups [apps], resources [deployments], verbs [patch]"
    )
    assert reported in shown.stdout, f"expected {reported!r} in:\n{shown.stdout}"

    written = rbac_command(
        "--from", str(record), "--role-file", "role.yaml", "--write", kubeconfig, cwd=tmp_path
    )
    assert written.returncode == 0, f"rbac --write failed: {written.stderr}"
    role = yaml.safe_load((tmp_path / "role.yaml").read_text())
    deployments = next(r for r in role["rules"] if r["resources"] == ["deployments"])
    assert deployments["verbs"] == ["get"], f"expected the 403 not written, saw {deployments}"

    # The author grants it, asked at a terminal (cli.py's --grant-denied).
    role_file = str(tmp_path / "role.yaml")
    args = cli.parse(
        ["rbac", "--from", str(record), "--role-file", role_file, "--write", kubeconfig]
    )
    args.grant_denied = True
    controller, device = os.openpty()
    os.write(controller, b"y\n")
    with open(device, encoding="utf-8") as answers:
        code = command.main(args, environ=dict(os.environ), terminal=answers)
    os.close(controller)
    assert code == 0, f"expected rbac --grant-denied --write to exit 0, saw {code}"
    role = yaml.safe_load((tmp_path / "role.yaml").read_text())
    assert role["kind"] == "Role" and role["metadata"] == {"name": "manager-role"}, role
    deployments = next(r for r in role["rules"] if r["resources"] == ["deployments"])
    assert deployments["verbs"] == ["get", "patch"], f"expected patch granted: {deployments}"
    kube.update(ROLE, {**role, "metadata": {"name": "manager-role", "namespace": namespace}})

    wait_condition(
        kube, namespace=namespace, name="p1", kind="Successful", status="True", operator=operator
    )
    web = kube.get(DEPLOYMENT, name="web", namespace=namespace)
    assert web["metadata"]["labels"].get("probed") == "yes", web["metadata"].get("labels")


def test_sample_run_in_check_mode_learns_the_rules(
    cluster: devcluster.Cluster, kube: Client, namespace: str, probe_crd: GVK, tmp_path: Path
) -> None:
    (tmp_path / "roles" / "learner" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "learner" / "tasks" / "main.yml").write_text(TASKS)
    (tmp_path / "watches.yaml").write_text(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: learner\n"
    )
    (tmp_path / "sample.yaml").write_text(yaml.safe_dump(probe("p1", namespace, {})))
    (tmp_path / "role.yaml").write_text(yaml.safe_dump(role_document(namespace)))
    kube.create(DEPLOYMENT, web_deployment(), namespace=namespace)

    shown = rbac_command(
        "--sample",
        "sample.yaml",
        "--role-file",
        "role.yaml",
        f"--kubeconfig={cluster.kubeconfig}",
        f"--ansible-roles-path={tmp_path / 'roles'}",
        cwd=tmp_path,
    )

    assert shown.returncode == 0, f"rbac --sample failed: {shown.stderr}"
    derived = {
        (r["apiGroups"][0], r["resources"][0]): r["verbs"]
        for r in yaml.safe_load(shown.stdout)["rules"]
    }
    assert "create" in derived.get(("", "configmaps"), []), derived
    assert derived.get(("apps", "deployments")) == ["get", "patch"], derived
    assert "# unused in role.yaml: core secrets get" in shown.stdout, shown.stdout
    web = kube.get(DEPLOYMENT, name="web", namespace=namespace)
    assert "probed" not in (web["metadata"].get("labels") or {}), "check mode changed the cluster"
