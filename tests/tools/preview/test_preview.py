"""``playbook-operator preview`` on the embedded cluster: what a CR would change, changing nothing.

The Memcached CRD and role of this repository run in the test's namespace; the
proof that nothing changed is every object of the namespace, with its
resourceVersion, before and after.
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
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for
from tests.runner.support import PROBE, condition

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
DEPLOYMENT = GVK("apps", "v1", "Deployment")

Snapshot = dict[str, str]  # "<resource> <name>" → resourceVersion


@pytest.fixture(scope="module")
def memcached_crd(cluster: devcluster.Cluster) -> GVK:
    cluster.kubectl("apply", "-f", str(ROOT / "config" / "crd" / "bases"))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/memcacheds.cache.example.com"
    )
    return MEMCACHED


def namespace_objects(cluster: devcluster.Cluster, namespace: str) -> Snapshot:
    """Every object of every listable namespaced kind in ``namespace``."""
    kinds = cluster.kubectl("api-resources", "--namespaced", "--verbs=list", "-o", "name")
    names = ",".join(sorted(k for k in kinds.stdout.split() if k != "events.events.k8s.io"))
    listed = json.loads(cluster.kubectl("get", names, "-n", namespace, "-o", "json").stdout)
    return {
        f"{item['kind']} {item['metadata']['name']}": item["metadata"]["resourceVersion"]
        for item in listed["items"]
    }


def settled(cluster: devcluster.Cluster, namespace: str) -> Snapshot:
    """The namespace once two looks a second apart agree (pods started, events written)."""
    last: list[Snapshot] = [{}]

    def observe() -> tuple[Snapshot, Snapshot]:
        before, last[0] = last[0], namespace_objects(cluster, namespace)
        return before, last[0]

    wait_for(
        observe,
        until=lambda pair: pair[0] == pair[1],
        describe=f"namespace {namespace} to stop changing",
        timeout=120,
        interval=1.0,
    )
    return last[0]


def preview(
    cr: dict[str, Any], *, cwd: Path, workdir: Path, cluster: devcluster.Cluster, namespace: str
) -> tuple[int, dict[str, Any], str]:
    """Run the subcommand on ``cr``; exit code, JSON report, standard error."""
    path = workdir / "cr.yaml"
    path.write_text(yaml.safe_dump(cr))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "preview",
            str(path),
            "--watches-file=watches.yaml",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--namespace={namespace}",
            "--output=json",
        ],
        cwd=cwd,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(cwd / "roles")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {}
    return done.returncode, report, done.stderr


def memcached(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": MEMCACHED.api_version,
        "kind": MEMCACHED.kind,
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def changes(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [o for o in report.get("objects", []) if o["kind"] == kind]


def test_new_memcached_would_be_created(
    cluster: devcluster.Cluster, namespace: str, memcached_crd: GVK, tmp_path: Path
) -> None:
    before = settled(cluster, namespace)
    code, report, stderr = preview(
        memcached("fresh", 2), cwd=ROOT, workdir=tmp_path, cluster=cluster, namespace=namespace
    )
    assert code == 0, f"expected exit 0, saw {code}; stderr:\n{stderr}\nreport: {report}"
    assert report["exists"] is False, report
    deployment = changes(report, "Deployment")
    assert [d["change"] for d in deployment] == ["would create"], report["objects"]
    assert deployment[0]["name"] == "fresh-memcached", deployment
    assert "would create" in {s["change"] for s in changes(report, "Service")}, report["objects"]
    status = report["role_status"]
    assert status and status.get("size") == 2, f"expected the role's status for size 2: {status}"
    assert report["runner_status"] == "Successful", report["runner_status"]
    assert report["refused"] == [], report["refused"]
    after = namespace_objects(cluster, namespace)
    assert after == before, f"the namespace changed: before {before}, after {after}"


def test_spec_change_shows_the_deployment_diff_and_changes_nothing(
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    memcached_crd: GVK,
    tmp_path: Path,
) -> None:
    operator = OperatorProcess(
        workdir=tmp_path,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=(ROOT / "watches.yaml").read_text(),
        env={"ANSIBLE_ROLES_PATH": str(ROOT / "roles")},
    ).start()
    try:
        kube.create(MEMCACHED, memcached("cache", 1), namespace=namespace)
        operator.eventually(
            lambda: kube.get(MEMCACHED, name="cache", namespace=namespace),
            until=lambda obj: (condition(obj, "Successful") or {}).get("status") == "True",
            describe="Memcached cache Successful",
            timeout=180,
        )
    finally:
        operator.stop()
    assert (
        kube.get(DEPLOYMENT, name="cache-memcached", namespace=namespace)["spec"]["replicas"] == 1
    )

    before = settled(cluster, namespace)
    code, report, stderr = preview(
        memcached("cache", 3), cwd=ROOT, workdir=tmp_path, cluster=cluster, namespace=namespace
    )
    assert code == 0, f"expected exit 0, saw {code}; stderr:\n{stderr}\nreport: {report}"
    assert report["exists"] is True, report
    deployment = changes(report, "Deployment")
    assert [d["change"] for d in deployment] == ["would change"], report["objects"]
    diff = deployment[0]["diff"]
    assert "-  replicas: 1" in diff and "+  replicas: 3" in diff, f"Deployment diff:\n{diff}"
    assert report["role_status"] and report["role_status"].get("size") == 3, report["role_status"]
    after = namespace_objects(cluster, namespace)
    assert after == before, f"the namespace changed: before {before}, after {after}"
    live = kube.get(DEPLOYMENT, name="cache-memcached", namespace=namespace)
    assert live["spec"]["replicas"] == 1, f"replicas changed to {live['spec']['replicas']}"


def test_role_that_is_not_check_mode_safe_is_reported_per_task(
    cluster: devcluster.Cluster, namespace: str, probe_crd: GVK, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "watches.yaml").write_text(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: unsafe\n"
    )
    (project / "roles").symlink_to(FIXTURES / "roles")
    cr = {
        "apiVersion": PROBE.api_version,
        "kind": PROBE.kind,
        "metadata": {"name": "p"},
        "spec": {"message": "hi"},
    }
    before = settled(cluster, namespace)
    code, report, stderr = preview(
        cr, cwd=project, workdir=tmp_path, cluster=cluster, namespace=namespace
    )
    assert code == 1, f"expected exit 1 (a task failed), saw {code}; stderr:\n{stderr}"
    unsafe = {t["task"]: t["reason"] for t in report["unsafe"]}
    expected = {
        "Run a command": "skipped: no check mode",
        "Call a module without check mode": "skipped: no check mode",
        "Insist the marker exists": "failed in check mode",
    }
    assert unsafe == expected, f"expected {expected}, saw {unsafe}"
    assert [c["change"] for c in changes(report, "ConfigMap")] == ["would create"], report
    assert report["runner_status"].startswith("Failure: Insist the marker exists"), report
    after = namespace_objects(cluster, namespace)
    assert after == before, f"the namespace changed: before {before}, after {after}"
