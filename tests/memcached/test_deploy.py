"""The Memcached operator end to end, deployed with config/ and run under its own RBAC.

``make deploy``'s manifests are applied to the embedded cluster (the API server
must accept them all), then the runner runs locally with a token of the
manager's ServiceAccount instead of admin credentials: every reconcile below
succeeding without a "forbidden" proves config/rbac is sufficient, and the
RBAC checks at the end prove it is no broader than the role needs.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from devcluster import accounts
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import harness
from testkit.harness import OperatorProcess
from testkit.helpers import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_NAMESPACE = "memcached-operator-system"
SERVICE_ACCOUNT = "memcached-operator-controller-manager"
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
SERVICE = GVK("", "v1", "Service")
POD = GVK("", "v1", "Pod")
PDB = GVK("policy", "v1", "PodDisruptionBudget")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


@pytest.fixture(scope="module")
def deployed(cluster: devcluster.Cluster) -> Iterator[str]:
    """``make deploy``'s manifests applied; yields the rendered YAML."""
    rendered = cluster.kubectl("kustomize", str(ROOT / "config" / "default")).stdout
    cluster.kubectl("apply", "-f", "-", input=rendered)
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/memcacheds.cache.example.com"
    )
    yield rendered
    # Waits, so a later apply does not meet a terminating namespace.
    cluster.kubectl("delete", "--ignore-not-found", "--timeout=120s", "-f", "-", input=rendered)


@pytest.fixture
def manager_kubeconfig(cluster: devcluster.Cluster, deployed: str, tmp_path: Path) -> Path:
    return accounts.write_kubeconfig(
        cluster,
        namespace=SYSTEM_NAMESPACE,
        name=SERVICE_ACCOUNT,
        path=tmp_path / "manager.kubeconfig",
        create=False,  # it must come from config/rbac
    )


def test_manifests_are_accepted_and_complete(deployed: str) -> None:
    kinds = sorted({doc["kind"] for doc in yaml.safe_load_all(deployed) if doc})
    for kind in ("CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Deployment"):
        assert kind in kinds, f"{kind} missing from config/default: {kinds}"
    manager = next(
        doc for doc in yaml.safe_load_all(deployed) if doc and doc["kind"] == "Deployment"
    )
    pod = manager["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True, pod["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True, container
    # The image's ENTRYPOINT is `playbook-operator run --watches-file=...`; args add flags.
    assert "--leader-elect" in container["args"], container["args"]


def kubectl_as(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    kubectl = devcluster.resolve("kubectl")
    return subprocess.run(
        [str(kubectl), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("verb", "resource", "allowed", "subresource"),
    [
        pytest.param("create", "deployments.apps", True, "", id="create-deployments"),
        pytest.param("patch", "memcacheds.cache.example.com", True, "status", id="patch-status"),
        pytest.param("patch", "memcacheds.cache.example.com", False, "", id="no-patch-spec"),
        pytest.param(
            "create", "leases.coordination.k8s.io", True, "", id="leases-in-system-namespace"
        ),
        pytest.param(
            "create", "tokenreviews.authentication.k8s.io", True, "", id="metrics-tokenreviews"
        ),
        pytest.param(
            "create",
            "subjectaccessreviews.authorization.k8s.io",
            True,
            "",
            id="metrics-accessreviews",
        ),
        pytest.param("create", "poddisruptionbudgets.policy", True, "", id="create-pdbs"),
        pytest.param("delete", "poddisruptionbudgets.policy", True, "", id="delete-pdbs"),
        pytest.param(
            "create", "horizontalpodautoscalers.autoscaling", True, "", id="create-autoscalers"
        ),
        pytest.param(
            "delete", "horizontalpodautoscalers.autoscaling", True, "", id="delete-autoscalers"
        ),
        pytest.param("create", "events", True, "", id="create-events"),
        pytest.param("delete", "deployments.apps", False, "", id="no-delete-deployments"),
        pytest.param("delete", "services", False, "", id="no-delete-services"),
        pytest.param(
            "update", "horizontalpodautoscalers.autoscaling", False, "", id="no-update-hpa"
        ),
        pytest.param("get", "secrets", False, "", id="no-secrets"),
        pytest.param("create", "pods", False, "", id="no-create-pods"),
        pytest.param("create", "clusterroles.rbac.authorization.k8s.io", False, "", id="no-rbac"),
    ],
)
def test_manager_rbac_is_least_privilege(
    manager_kubeconfig: Path, verb: str, resource: str, allowed: bool, subresource: str
) -> None:
    # `can-i patch x/status` would ask about an object named "status": --subresource says it.
    sub = [f"--subresource={subresource}"] if subresource else []
    answer = kubectl_as(
        manager_kubeconfig, "auth", "can-i", verb, resource, *sub, "-n", SYSTEM_NAMESPACE
    )
    seen = answer.stdout.strip()
    assert seen == ("yes" if allowed else "no"), (
        f"can-i {verb} {resource}: expected allowed={allowed}, saw {seen!r} {answer.stderr}"
    )


def _token(kubeconfig: Path) -> str:
    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


def _memcached(kube: Client, namespace: str) -> dict[str, Any]:
    return kube.get(MEMCACHED, name="memcached-sample", namespace=namespace)


def _converged(kube: Client, namespace: str, size: int) -> dict[str, Any]:
    """The Memcached, once a run at its generation reported the rollout of ``size`` pods
    done (Successful, Progressing=False, Available) and listed them in status.nodes."""

    def observe() -> dict[str, Any]:
        obj = _memcached(kube, namespace)
        deployment = kube.get(DEPLOYMENT, name="memcached-sample-memcached", namespace=namespace)
        pods = kube.list(
            POD,
            namespace=namespace,
            query={"labelSelector": "app.kubernetes.io/instance=memcached-sample"},
        )["items"]
        running = sorted(
            p["metadata"]["name"]
            for p in pods
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        )
        status = obj.get("status") or {}
        found = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return {
            "successful": found.get("Successful") == "True",
            "rolled out": found.get("Progressing") == "False" and found.get("Available") == "True",
            "observed": status.get("observedGeneration") == obj["metadata"]["generation"],
            "replicas": deployment["spec"]["replicas"],
            "ready": deployment.get("status", {}).get("readyReplicas", 0),
            "nodes": sorted(status.get("nodes") or []),
            "running": running,
            "obj": obj,
        }

    def done(seen: dict[str, Any]) -> bool:
        return bool(
            seen["successful"]
            and seen["rolled out"]
            and seen["observed"]
            and seen["replicas"] == size
            and seen["ready"] == size
            and len(seen["running"]) == size
            and seen["nodes"] == seen["running"]
        )

    seen = wait_for(
        observe,
        until=done,
        describe=f"rolled out with {size} replicas, {size} running pods listed in status.nodes",
        timeout=120,
        ignore=(kube_errors.NotFoundError,),
    )
    return dict(seen["obj"])


def test_memcached_lifecycle_under_manager_service_account(
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    manager_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    operator = OperatorProcess(
        workdir=tmp_path,
        kubeconfig=manager_kubeconfig,
        namespace=namespace,
        watches=(ROOT / "watches.yaml").read_text(),
        args=(
            "--leader-elect",
            "--leader-election-id=memcached-operator",
            f"--leader-election-namespace={SYSTEM_NAMESPACE}",
            "--metrics-secure",  # as config/default runs it
            "--metrics-require-rbac",
        ),
        env={"ANSIBLE_ROLES_PATH": str(ROOT / "roles")},
    ).start()
    # A scraper bound to config/rbac's metrics-reader, so the run counts below can be read.
    accounts.ensure(cluster, namespace=namespace, name="scraper")
    binding = f"{namespace}-scraper"
    kube.create(
        CLUSTER_ROLE_BINDING,
        {
            "metadata": {"name": binding},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "memcached-operator-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
        },
    )
    operator.metrics_token = accounts.mint_token(cluster, namespace=namespace, name="scraper")
    try:
        sample = yaml.safe_load(
            (ROOT / "config" / "samples" / "cache_v1alpha1_memcached.yaml").read_text()
        )
        sample["metadata"]["namespace"] = namespace
        kube.create(MEMCACHED, sample, namespace=namespace)
        obj = _converged(kube, namespace, 3)
        deployment = kube.get(DEPLOYMENT, name="memcached-sample-memcached", namespace=namespace)
        service = kube.get(SERVICE, name="memcached-sample-memcached", namespace=namespace)
        pdb = kube.get(PDB, name="memcached-sample-memcached", namespace=namespace)
        for child in (deployment, service, pdb):
            owners = [ref["uid"] for ref in child["metadata"].get("ownerReferences", [])]
            assert owners == [obj["metadata"]["uid"]], f"{child['kind']} owners: {owners}"

        kube.patch(
            MEMCACHED, name="memcached-sample", namespace=namespace, body={"spec": {"size": 1}}
        )
        _converged(kube, namespace, 1)
        # Two rollouts changed the Deployment's status a dozen times and the deployment
        # controller wrote its revision annotation; none of that is drift, and only its
        # readiness (watchDependentReadiness) brings the role back. So every run was the
        # create, the resize, the removal of the PDB the resize made the role delete, one
        # per rollout when the Deployment became ready, or one the role asked for with
        # requeue_after (its one-minute safety net, which kwok's pods never need).
        requested = sum(
            1
            for line in list(operator.lines)
            if line.get("msg") == "reconciled" and line.get("result") == "requeue_after"
        )
        assert operator.runs() - requested <= 5, (
            f"expected at most 5 runs besides the {requested} requeued ones, saw "
            f"{operator.runs()}\n{operator.triggers()}"
        )

        # `kubectl scale` on the owned Deployment is reverted.
        cluster.kubectl(
            "scale", "deployment/memcached-sample-memcached", "--replicas=4", "-n", namespace
        )
        _converged(kube, namespace, 1)

        kube.delete(MEMCACHED, name="memcached-sample", namespace=namespace)

        def leftovers() -> list[str]:
            found = []
            for gvk in (DEPLOYMENT, SERVICE, PDB, POD):
                found += [
                    f"{gvk.kind}/{o['metadata']['name']}"
                    for o in kube.list(gvk, namespace=namespace)["items"]
                ]
            return found

        wait_for(
            leftovers,
            until=lambda left: not left,
            describe="garbage collection of every child",
            timeout=90,
        )
        # Secure metrics under the manager's own RBAC: its TokenReview and
        # SubjectAccessReview go through: the scraper's token is served (the run counts
        # above), the manager's own token, not bound to metrics-reader, gets 403.
        assert (
            harness.scrape(
                f"https://{operator.address('metrics')}/metrics", token=_token(manager_kubeconfig)
            )[0]
            == 403
        )
        assert not operator.logged("metrics authorization failed"), operator.tail()
        denied = [line for line in operator.raw if "forbidden" in line.lower() or " 403 " in line]
        assert not denied, "the manager's RBAC denied something:\n" + "\n".join(denied[:5])
        # The role is kept free of deprecated Ansible features on every supported line.
        deprecated = [line for line in operator.lines if "deprecation" in str(line.get("msg"))]
        assert not deprecated, f"expected no Ansible deprecation warning, saw: {deprecated[:3]}"
    finally:
        kube.delete(CLUSTER_ROLE_BINDING, name=binding)
        assert operator.stop() == 0, operator.tail()
