"""``make docker-build-local deploy NODE=real``: the operator image runs as the manager
pod on the embedded cluster's real node, deployed from config/devcluster-real (which is
config/default plus the node's selector, toleration and ``imagePullPolicy: Never``).

That pod is config/default's manager as users run it: in-cluster configuration through
the ``kubernetes`` Service (kube-proxy to devcluster's relay on the bridge, see
``devcluster.apirelay``), its ServiceAccount's token, a read-only root filesystem, a
non-root user, probes the kubelet checks, leader election, and metrics over HTTPS that
only an authorized token may read. The sample Memcached (config/samples/) is then
reconciled by it; its pods are sent to the real node by the CR's own ``nodeSelector``
and ``tolerations`` (fields the CRD and the memcached role already have), and its
Service answers memcached's protocol: ``set``/``get`` and ``version``, which the
stand-in image reports as Debian's memcached version (1.6.18 on bookworm, the suite
hack/image/base.sh used until it moved to trixie), not the tag's 1.6.38. The sample
runs with its exporter sidecar (the stand-in of hack/node/memcached-exporter/), whose
``/metrics`` on each pod's IP shows ``memcached_commands_total`` rising after them.

The manager is deployed into the test's namespace, watching only that namespace, with
its cluster-wide RBAC under a name prefix of its own, so it never touches other tests'
Memcacheds on the shared cluster.

Skipped, with the reason, where the real node cannot run or podman/debootstrap are
missing.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

import devcluster
from devcluster import images, node, nodeconfig
from runner.kube import client, errors
from runner.kube.types import GVK
from testkit.helpers import unique_name, wait_for
from tests.image import container

ROOT = Path(__file__).resolve().parents[2]
#: Its own tag (test_container.py builds :image-test); podman's layer cache is shared.
IMAGE = "localhost/memcached-operator:real-node-test"
OVERLAY = ROOT / "config" / "devcluster-real"
SAMPLE = ROOT / "config" / "samples" / "cache_v1alpha1_memcached.yaml"

DEPLOYMENT = GVK("apps", "v1", "Deployment")
POD = GVK("", "v1", "Pod")
SERVICE = GVK("", "v1", "Service")
NAMESPACE = GVK("", "v1", "Namespace")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
#: What the stand-in for memcached:1.6.38-alpine reports: Debian's memcached, of the suite
#: hack/image/base.sh builds on (bookworm's 1.6.18, trixie's 1.6.38), so the minor only.
STAND_IN_VERSION = "VERSION 1.6."


@pytest.fixture(scope="module")
def real_node(cluster: devcluster.Cluster) -> Iterator[nodeconfig.Paths]:
    """The cluster's real node, added for this module unless it already runs."""
    try:
        node.preflight()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    missing = container.missing_tools()
    if missing:
        pytest.skip(f"building the operator image needs {', '.join(missing)}")
    paths = nodeconfig.Paths.of(cluster.layout)
    if cluster.has_real_node():
        # A node started before a stand-in was added lacks it; loading is skipped for
        # images the node already holds.
        for image in images.build_stand_ins():
            images.load(image=image, paths=paths)
        yield paths
        return
    devcluster.build(skip_overridden=True, node=True)
    try:
        cluster.add_real_node()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    try:
        yield paths
    finally:
        cluster.remove_real_node()


def strict_clients_trust(cluster: devcluster.Cluster) -> bool:
    """Whether the cluster's CA carries a subject key identifier: Python 3.13's strict
    verification (the default image's Python) refuses a CA without one. Clusters
    started before devcluster.certs added key identifiers lack it."""
    ca = x509.load_pem_x509_certificate(cluster.ca_file.read_bytes())
    try:
        ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    except x509.ExtensionNotFound:
        return False
    return True


@pytest.fixture(scope="module")
def operator_image(
    cluster: devcluster.Cluster,
    real_node: nodeconfig.Paths,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """IMAGE built by make docker-build-local's script and loaded into the real node."""
    if not strict_clients_trust(cluster) and os.environ.get("BASE_SUITE") != "bookworm":
        pytest.skip(
            f"the cluster in {cluster.data_dir} was started with a CA that has no subject "
            "key identifier, which the image's Python 3.13 refuses: restart it (make "
            "cluster-down cluster-up NODE=real), or build on Python 3.11 "
            "(BASE_SUITE=bookworm ANSIBLE_CORE=2.19)"
        )
    log = tmp_path_factory.mktemp("image") / "build.log"
    built = container.build(image=IMAGE, log=log)
    started = time.monotonic()
    copied = images.load(image=IMAGE, paths=real_node)
    loaded = f"loaded in {time.monotonic() - started:.0f}s" if copied else "already loaded"
    print(f"\n{IMAGE}: built in {built:.0f}s, {loaded}")
    yield IMAGE


def render(*, directory: Path, namespace: str, prefix: str, image: str) -> list[dict[str, Any]]:
    """config/devcluster-real, moved into ``namespace`` and watching only it."""
    name, _, tag = image.rpartition(":")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": namespace,
        "namePrefix": prefix,
        "resources": [os.path.relpath(OVERLAY, directory)],
        "images": [{"name": "controller", "newName": name, "newTag": tag}],
        "patches": [{"path": "watch.yaml", "target": {"kind": "Deployment"}}],
    }
    watch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "controller-manager"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "env": [{"name": "WATCH_NAMESPACE", "value": namespace}],
                        }
                    ]
                }
            }
        },
    }
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization))
    (directory / "watch.yaml").write_text(json.dumps(watch))
    kubectl = devcluster.binaries.resolve(devcluster.binaries.KUBECTL)
    done = subprocess.run(
        [str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"kubectl kustomize: expected exit 0, saw {done.stderr}"
    # The test's namespace stands in for config/default's own (labelled below).
    return [d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] != "Namespace"]


def manager_log(paths: nodeconfig.Paths, namespace: str) -> str:
    """The manager container's log on the node (kubectl logs cannot reach it yet)."""
    found = sorted(paths.pod_logs.glob(f"{namespace}_*/manager/*.log"))
    if not found:
        return "(no manager log on the node)"
    return "\n".join(found[-1].read_text(errors="replace").splitlines()[-25:])


def memcached(address: str, *commands: bytes) -> list[str]:
    """Send each command to memcached at ``address``:11211; return each answer."""
    answers = []
    with socket.create_connection((address, 11211), timeout=3.0) as conn:
        for command, ends in commands_and_ends(commands):
            conn.sendall(command)
            reply = b""
            while not reply.endswith(ends):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                reply += chunk
            answers.append(reply.decode(errors="replace"))
    return answers


def commands_and_ends(commands: tuple[bytes, ...]) -> list[tuple[bytes, bytes]]:
    # `get` ends with END; set, version and errors end with their one line.
    return [(c, b"END\r\n" if c.startswith(b"get ") else b"\r\n") for c in commands]


def pods_of(kube: client.Client, *, namespace: str, selector: str) -> list[dict[str, Any]]:
    listing = kube.list(POD, namespace=namespace, query={"labelSelector": selector})
    return list(listing.get("items", []))


#: The exporter's counters the test's set and get move (upstream's names and labels).
COMMANDS = (("set", "hit"), ("get", "hit"))


def exporter_commands(addresses: list[str]) -> dict[tuple[str, str], float]:
    """memcached_commands_total by (command, status), summed over the exporters at
    ``addresses``:9150 (each answering memcached_up 1)."""
    totals: dict[tuple[str, str], float] = {}
    for address in addresses:
        url = f"http://{address}:9150/metrics"
        with urllib.request.urlopen(url, timeout=5.0) as reply:
            body = reply.read().decode(errors="replace")
        assert "\nmemcached_up 1\n" in body, f"expected memcached_up 1 from {url}, saw:\n{body}"
        for line in body.splitlines():
            if not line.startswith("memcached_commands_total{"):
                continue
            labels, _, value = line.partition("} ")
            fields = dict(
                pair.split("=", 1)
                for pair in labels.removeprefix("memcached_commands_total{").split(",")
            )
            key = (fields["command"].strip('"'), fields["status"].strip('"'))
            totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def live_pods(kube: client.Client, *, namespace: str, name: str) -> list[dict[str, Any]]:
    """The CR's memcached pods that are not being deleted."""
    pods = pods_of(kube, namespace=namespace, selector=f"app.kubernetes.io/instance={name}")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def answering(addresses: list[str]) -> list[str]:
    """Which of ``addresses`` answer memcached's ``version`` on 11211 right now."""
    up = []
    for address in addresses:
        try:
            reply = memcached(address, b"version\r\n")
        except OSError:
            continue
        if reply and reply[0].startswith("VERSION "):
            up.append(address)
    return up


def ready_ips(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(
        p["status"]["podIP"]
        for p in pods
        if p.get("status", {}).get("podIP")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        )
    )


def converge_on_live_containers(
    kube: client.Client, *, namespace: str, name: str, service: str
) -> None:
    """Day-2 changes, each checked on the containers themselves: scale 3→1 by spec (the
    removed pods' memcached stops answering on their IPs, the kept one still answers),
    a killed pod (a new container answers in its place), and the CR deleted (its
    Deployment and Service are collected and no memcached answers any more)."""
    before = ready_ips(live_pods(kube, namespace=namespace, name=name))
    assert len(before) == 3, f"expected 3 ready memcached pods before scaling, saw {before}"
    started = time.monotonic()
    kube.patch(MEMCACHED, name=name, namespace=namespace, body={"spec": {"size": 1}})
    kept = wait_for(
        lambda: ready_ips(live_pods(kube, namespace=namespace, name=name)),
        until=lambda ips: len(ips) == 1,
        describe=f"Memcached {name} scaled to one ready pod",
        timeout=120.0,
        interval=0.5,
    )
    gone = [ip for ip in before if ip not in kept]
    wait_for(
        lambda: answering(before),
        until=lambda up: up == kept,
        describe=f"memcached answering only on the kept pod {kept} (removed: {gone})",
        timeout=90.0,
        interval=0.5,
    )
    print(f"scaled 3→1 on the live containers in {time.monotonic() - started:.1f}s")

    started = time.monotonic()
    victim = live_pods(kube, namespace=namespace, name=name)[0]["metadata"]["name"]
    kube.request(
        "DELETE",
        kube.resource(POD).path(namespace=namespace, name=victim),
        body={"gracePeriodSeconds": 0},
    )
    replaced = wait_for(
        lambda: live_pods(kube, namespace=namespace, name=name),
        until=lambda pods: len(ready_ips(pods)) == 1 and pods[0]["metadata"]["name"] != victim,
        describe=f"a new ready memcached pod in place of the killed {victim}",
        timeout=120.0,
        interval=0.5,
    )
    assert replaced[0]["spec"].get("nodeName") == nodeconfig.NODE_NAME, (
        f"expected the replacement on {nodeconfig.NODE_NAME}, saw "
        f"{replaced[0]['spec'].get('nodeName')}"
    )
    wait_for(
        lambda: memcached(service, b"version\r\n"),
        until=lambda a: a[0].startswith("VERSION "),
        describe=f"memcached answering through the Service {service} after the kill",
        ignore=(OSError,),
        timeout=60.0,
        interval=0.5,
    )
    print(f"killed pod replaced and answering in {time.monotonic() - started:.1f}s")

    started = time.monotonic()
    last = ready_ips(replaced)
    kube.delete(MEMCACHED, name=name, namespace=namespace)
    wait_for(
        lambda: [
            kind
            for kind, gvk in (("Deployment", DEPLOYMENT), ("Service", SERVICE))
            if kube.list(
                gvk,
                namespace=namespace,
                query={"labelSelector": f"app.kubernetes.io/instance={name}"},
            ).get("items")
        ],
        until=lambda left: not left,
        describe=f"the Deployment and Service of the deleted Memcached {name} collected",
        timeout=120.0,
        interval=0.5,
    )
    wait_for(
        lambda: (
            pods_of(kube, namespace=namespace, selector=f"app.kubernetes.io/instance={name}"),
            answering(last),
        ),
        until=lambda seen: not seen[0] and not seen[1],
        describe=f"no memcached pod left and nothing answering on {last}",
        timeout=120.0,
        interval=0.5,
    )
    print(f"deleted CR's containers gone in {time.monotonic() - started:.1f}s")


def metrics_status(url: str, token: str | None) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False  # the manager's self-signed serving certificate
    context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=5.0) as reply:
            body = reply.read().decode(errors="replace")
            return int(reply.status) if "# TYPE" in body else -1
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_manager_runs_on_the_real_node_and_serves_the_sample_memcached(
    cluster: devcluster.Cluster,
    kube: client.Client,
    namespace: str,
    operator_image: str,
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    real_node = nodeconfig.Paths.of(cluster.layout)
    prefix = unique_name("t", max_length=8) + "-"
    documents = render(directory=tmp_path, namespace=namespace, prefix=prefix, image=operator_image)
    kube.patch(
        NAMESPACE,
        name=namespace,
        body={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    cluster_scoped = [d for d in documents if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    try:
        cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps({"kind": "List", "apiVersion": "v1", "items": documents}),
        )
        manager = next(d for d in documents if d["kind"] == "Deployment")["metadata"]["name"]

        def manager_pod() -> dict[str, Any]:
            pods = pods_of(kube, namespace=namespace, selector="control-plane=controller-manager")
            pod = pods[0] if pods else {}
            status = pod.get("status", {})
            return {
                "name": pod.get("metadata", {}).get("name"),
                "node": pod.get("spec", {}).get("nodeName"),
                "ready": [
                    c["status"] for c in status.get("conditions", []) if c["type"] == "Ready"
                ],
                "restarts": [s.get("restartCount") for s in status.get("containerStatuses", [])],
                "waiting": [
                    s.get("state", {}).get("waiting") for s in status.get("containerStatuses", [])
                ],
            }

        try:
            pod = wait_for(
                manager_pod,
                until=lambda p: p["ready"] == ["True"],
                describe=f"the manager pod of {manager} Ready (readiness probe by the kubelet)",
                timeout=90.0,
                interval=0.5,
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nmanager log:\n{manager_log(real_node, namespace)}"
            ) from None
        assert pod["node"] == nodeconfig.NODE_NAME, (
            f"expected the manager on {nodeconfig.NODE_NAME}, saw {pod['node']}"
        )
        print(f"\nmanager Ready on {pod['node']} after {time.monotonic() - started:.1f}s")

        lease = wait_for(
            lambda: kube.get(LEASE, name="memcached-operator", namespace=namespace),
            describe="the leader election Lease memcached-operator",
            ignore=(errors.NotFoundError,),
        )
        holder = lease["spec"].get("holderIdentity", "")
        assert holder.startswith(pod["name"]), (
            f"expected the Lease held by {pod['name']}, saw {holder!r}"
        )

        sample = yaml.safe_load(SAMPLE.read_text())
        sample["spec"]["nodeSelector"] = nodeconfig.node_selector()
        sample["spec"]["tolerations"] = [nodeconfig.toleration()]
        sample["spec"]["monitoring"] = {"enabled": True}  # the exporter sidecar
        kube.create(MEMCACHED, sample, namespace=namespace)
        name = sample["metadata"]["name"]
        size = sample["spec"]["size"]

        def memcached_status() -> dict[str, Any]:
            status = kube.get(MEMCACHED, name=name, namespace=namespace).get("status", {})
            conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
            return {"available": conditions.get("Available"), "ready": status.get("readyReplicas")}

        try:
            wait_for(
                memcached_status,
                until=lambda s: s["available"] == "True" and str(s["ready"]) == str(size),
                describe=f"Memcached {name} Available with {size} ready pods",
                timeout=120.0,
                interval=0.5,
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nmanager log:\n{manager_log(real_node, namespace)}"
            ) from None
        pods = pods_of(kube, namespace=namespace, selector=f"app.kubernetes.io/instance={name}")
        nodes = {p["spec"].get("nodeName") for p in pods}
        assert nodes == {nodeconfig.NODE_NAME}, (
            f"expected the memcached pods on {nodeconfig.NODE_NAME}, saw {nodes}"
        )

        listing = kube.list(
            SERVICE,
            namespace=namespace,
            query={"labelSelector": f"app.kubernetes.io/instance={name}"},
        )
        services = listing.get("items", [])
        assert len(services) == 1, f"expected one Service of {name}, saw {len(services)}"
        address = services[0]["spec"]["clusterIP"]
        pod_ips = [p["status"]["podIP"] for p in pods]
        before = wait_for(
            lambda: exporter_commands(pod_ips),
            describe=f"the exporter sidecars on {pod_ips} to serve /metrics",
            ignore=(OSError,),
            interval=0.5,
        )
        answers = wait_for(
            lambda: memcached(
                address, b"set greeting 0 0 5\r\nhello\r\n", b"get greeting\r\n", b"version\r\n"
            ),
            until=lambda a: a[0] == "STORED\r\n",
            describe=f"memcached at {address}:11211 to store a key",
            ignore=(OSError,),
            interval=0.5,
        )
        assert answers[1] == "VALUE greeting 0 5\r\nhello\r\nEND\r\n", (
            f"expected the stored value back, saw {answers[1]!r}"
        )
        assert answers[2].startswith(STAND_IN_VERSION), (
            f"expected {STAND_IN_VERSION}…, saw {answers[2]!r}"
        )
        after = exporter_commands(pod_ips)
        rose = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in COMMANDS}
        assert all(delta >= 1 for delta in rose.values()), (
            f"expected memcached_commands_total to rise by at least 1 for {COMMANDS} after "
            f"the set and get, saw {rose} (before {before}, after {after})"
        )

        metrics = next(d for d in documents if d["kind"] == "Service")
        metrics_ip = kube.get(SERVICE, name=metrics["metadata"]["name"], namespace=namespace)[
            "spec"
        ]["clusterIP"]
        url = f"https://{metrics_ip}:8443/metrics"
        assert metrics_status(url, cluster.admin_token) == 200, (
            "expected /metrics to answer an authorized token"
        )
        assert metrics_status(url, None) in (401, 403), (
            "expected /metrics to refuse a request without a token"
        )
        print(
            f"sample Memcached served ({answers[2].strip()}) through {address} after "
            f"{time.monotonic() - started:.1f}s"
        )
        try:
            converge_on_live_containers(kube, namespace=namespace, name=name, service=address)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nmanager log:\n{manager_log(real_node, namespace)}"
            ) from None
    finally:
        # Everything else lives in the test's namespace, which its fixture deletes.
        names = [f"{d['kind'].lower()}/{d['metadata']['name']}" for d in cluster_scoped]
        if names:
            cluster.kubectl("delete", "--wait=false", "--ignore-not-found", *names, check=False)
