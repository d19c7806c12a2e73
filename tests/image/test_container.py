"""The operator image, built with podman, runs the Memcached operator against the cluster.

The image comes from ``make docker-build-local``'s script (no registry: a base made from
Debian packages, then the project's Dockerfile). The container runs as the manager
Deployment runs it (see ``container.py``): uid 1001, read-only root filesystem, in-cluster
configuration with a token of the manager's ServiceAccount, whose permissions are
config/rbac's, applied under a name prefix of this test's own. Skipped, saying why,
where podman or debootstrap is missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import contextlib
import os
import urllib.error
import urllib.request
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
from testkit.helpers import unique_name
from tests.image import container as container_mod

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/memcached-operator:image-test"
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
NAMESPACE = GVK("", "v1", "Namespace")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(container_mod.missing_tools()),
        reason=(
            f"{', '.join(container_mod.missing_tools())} not installed: the image is built "
            "and run with podman (apt-get install podman buildah runc debootstrap, as .ci/run)"
        ),
    ),
]


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    log = tmp_path_factory.mktemp("image") / "build.log"
    seconds = container_mod.build(image=IMAGE, log=log)
    print(f"\nimage {IMAGE} built in {seconds:.0f}s (log: {log})")
    return IMAGE


@pytest.fixture
def manager_rbac(
    cluster: devcluster.Cluster, kube: Client, tmp_path: Path
) -> Iterator[tuple[str, str, Path]]:
    """config/rbac in a namespace of its own, its cluster-wide names prefixed so that they
    never meet ``make deploy``'s; yields (namespace, prefix, the ServiceAccount's token, CA
    and namespace files, as a pod of the manager Deployment would have them)."""
    namespace = unique_name("image-system", max_length=30)
    prefix = f"{namespace}-"
    kube.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    overlay = tmp_path / "rbac"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "namespace": namespace,
                "namePrefix": prefix,
                "resources": [os.path.relpath(ROOT / "config" / "rbac", overlay)],
            }
        )
    )
    rendered = cluster.kubectl("kustomize", str(overlay)).stdout
    cluster.kubectl("apply", "-f", "-", input=rendered)
    try:
        yield (
            namespace,
            prefix,
            container_mod.write_service_account(
                tmp_path / "serviceaccount",
                token=accounts.mint_token(
                    cluster, namespace=namespace, name=f"{prefix}controller-manager"
                ),
                ca=cluster.ca_file.read_bytes(),
                namespace=namespace,
            ),
        )
    finally:
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", "-f", "-", input=rendered)
        with contextlib.suppress(kube_errors.NotFoundError):
            kube.delete(NAMESPACE, name=namespace)


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def _health(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


#: What the default image runs: Debian 13's Python and the newest ansible-core line.
_VERSIONS = (
    "import sys, ansible.release; from runner.warm import gates; "
    "print(f'{sys.version_info[0]}.{sys.version_info[1]}', ansible.release.__version__); "
    "print(gates.describe({**gates.check('program'), **gates.check('module')}) or 'none off')"
)


@pytest.mark.timeout(1800)  # a cold image build (debootstrap, pip) is part of it
def test_the_default_image_runs_ansible_core_2_21_warm_on_python_3_13(image: str) -> None:
    done = container_mod.podman(
        "run", "--rm", "--network=host", "--entrypoint=python3", image, "-c", _VERSIONS
    )
    versions, off = done.stdout.strip().splitlines()[-2:]
    python, core = versions.split()
    assert (python, core.rsplit(".", 1)[0]) == ("3.13", "2.21"), (
        f"expected Python 3.13 and ansible-core 2.21, saw Python {python}, ansible-core {core}"
    )
    assert off == "none off", f"expected every warm mechanism on in the image, off: {off}"


@pytest.mark.timeout(1800)  # a cold image build (debootstrap, pip) is part of it
def test_image_runs_memcached_operator_as_the_manager_deployment(
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    image: str,
    manager_rbac: tuple[str, str, Path],
) -> None:
    system_namespace, prefix, service_account = manager_rbac
    cluster.kubectl("apply", "-k", str(ROOT / "config" / "crd"))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/memcacheds.cache.example.com"
    )
    # A scraper bound to config/rbac's metrics-reader, as Prometheus would be.
    accounts.ensure(cluster, namespace=system_namespace, name="scraper")
    scraper_binding = f"{prefix}scraper"
    kube.create(
        CLUSTER_ROLE_BINDING,
        {
            "metadata": {"name": scraper_binding},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{prefix}metrics-reader",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": "scraper", "namespace": system_namespace}
            ],
        },
    )
    scraper_token = accounts.mint_token(cluster, namespace=system_namespace, name="scraper")

    # The sample exists before the container starts: its first reconcile is the
    # container's first piece of work.
    sample = yaml.safe_load(
        (ROOT / "config" / "samples" / "cache_v1alpha1_memcached.yaml").read_text()
    )
    size = int(sample["spec"]["size"])
    kube.create(MEMCACHED, sample, namespace=namespace)

    manager = container_mod.ManagerContainer(
        image=image,
        name=unique_name("memcached-operator", max_length=40),
        server=cluster.server,
        service_account=service_account,
        watch_namespace=namespace,
    ).start()
    try:
        manager.eventually(
            lambda: _health(manager.health_port, "/healthz") == 200,
            describe=f"/healthz on :{manager.health_port} to answer 200",
        )
        uid = manager.exec("id", "-u").stdout.strip()
        assert uid == "1001", f"the container's user: expected uid 1001, saw {uid}"
        # No kubeconfig anywhere: the runner can only have used in-cluster configuration.
        kubeconfig = manager.exec("sh", "-c", 'ls "$HOME/.kube" ${KUBECONFIG:-}', check=False)
        assert kubeconfig.returncode != 0, f"expected no kubeconfig, saw {kubeconfig.stdout}"
        # Even root cannot write outside the two tmpfs mounts.
        written = container_mod.podman(
            "exec", "--user=0", manager.name, "touch", "/opt/ansible/probe", check=False
        )
        assert written.returncode != 0, "expected a read-only root filesystem, could write"
        assert "Read-only file system" in written.stderr, written.stderr
        lease = manager.eventually(
            lambda: kube.get(LEASE, name="memcached-operator", namespace=system_namespace),
            describe=f"Lease memcached-operator in {system_namespace} held",
            ignore=(kube_errors.NotFoundError,),
            until=lambda lease: bool(lease["spec"].get("holderIdentity")),
        )

        def converged() -> dict[str, Any]:
            obj = kube.get(MEMCACHED, name=sample["metadata"]["name"], namespace=namespace)
            deployment = kube.get(
                DEPLOYMENT, name="memcached-sample-memcached", namespace=namespace
            )
            return {
                "conditions": _conditions(obj),
                "observed": (obj.get("status") or {}).get("observedGeneration")
                == obj["metadata"]["generation"],
                "replicas": deployment["spec"]["replicas"],
                "ready": deployment.get("status", {}).get("readyReplicas", 0),
            }

        def done(seen: dict[str, Any]) -> bool:
            return bool(
                seen["conditions"].get("Successful") == "True"
                and seen["conditions"].get("Available") == "True"
                and seen["observed"]
                and seen["replicas"] == size
                and seen["ready"] == size
            )

        manager.eventually(
            converged,
            until=done,
            describe=f"the sample Successful and Available with {size} ready replicas",
            timeout=300,
            ignore=(kube_errors.NotFoundError,),
        )
        size_bytes = container_mod.podman("image", "inspect", "--format={{.Size}}", image)
        print(
            f"\ncontainer start → runner started {manager.first('started')}s, → first "
            f"reconcile done {manager.first('reconciled')}s; image {size_bytes.stdout.strip()} B"
        )

        # A manual scale of the owned Deployment is reverted by the containerised runner.
        cluster.kubectl(
            "scale",
            "deployment/memcached-sample-memcached",
            f"--replicas={size + 2}",
            "-n",
            namespace,
        )
        manager.eventually(
            converged,
            until=lambda seen: done(seen) and seen["replicas"] == size,
            describe=f"the scale to {size + 2} reverted to {size}",
            timeout=300,
        )

        code, body = harness.scrape(
            f"https://127.0.0.1:{manager.metrics_port}/metrics", token=scraper_token
        )
        assert code == 200, f"/metrics with the scraper's token: expected 200, saw {code}"
        assert "controller_runtime_reconcile_total" in body, body[:500]
        code, _ = harness.scrape(f"https://127.0.0.1:{manager.metrics_port}/metrics")
        assert code in (401, 403), f"/metrics without a token: expected 401/403, saw {code}"
        assert lease["spec"]["holderIdentity"], lease
        # Deleted while the runner runs, so that nothing is left waiting on it.
        kube.delete(MEMCACHED, name=sample["metadata"]["name"], namespace=namespace)
        manager.eventually(
            lambda: kube.list(MEMCACHED, namespace=namespace)["items"],
            until=lambda items: not items,
            describe="the sample deleted",
        )
        denied = [line for line in manager.raw if "forbidden" in line.lower()]
        assert not denied, "config/rbac denied the container something:\n" + "\n".join(denied[:5])
    finally:
        exit_code = manager.stop()
        kube.delete(CLUSTER_ROLE_BINDING, name=scraper_binding)
    assert exit_code == 0, f"expected exit 0 after SIGTERM, saw {exit_code}\n{manager.tail()}"
