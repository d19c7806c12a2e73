"""The embedded cluster's real node (``devcluster up --node real``) runs a real container:
a pod of the stand-in memcached image, sent there by the node's label and toleration,
becomes Ready and answers memcached's ``version`` through a ClusterIP Service, which
only kube-proxy's iptables rules make reachable.

Where the node cannot run (not root, a Debian package missing, the kernel refusing
something, another cluster holding this machine's real node), the test is skipped
with the one-line reason devcluster gives. If this module added the node, it removes
it afterwards; a node that was already up stays.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import devcluster
from devcluster import binaries, images, node, nodeconfig
from runner.kube import client
from runner.kube.types import GVK, KubeObject
from testkit.helpers import wait_for

POD = GVK("", "v1", "Pod")
SERVICE = GVK("", "v1", "Service")
#: The stand-in hack/node/memcached.sh builds, named as the memcached role names it.
MEMCACHED_IMAGE = "docker.io/library/memcached:1.6.38-alpine"
#: What Debian bookworm's memcached (the stand-in) reports.
VERSION_PREFIX = "VERSION 1.6."


@pytest.fixture(scope="module")
def real_node(cluster: devcluster.Cluster) -> Iterator[str]:
    """The cluster's real node, added for this module unless it already runs."""
    try:
        node.preflight()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    if cluster.has_real_node():
        yield nodeconfig.NODE_NAME
        return
    devcluster.build(skip_overridden=True, node=True)
    try:
        cluster.add_real_node()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    try:
        yield nodeconfig.NODE_NAME
    finally:
        cluster.remove_real_node()


def memcached_pod(name: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "nodeSelector": nodeconfig.node_selector(),
            "tolerations": [nodeconfig.toleration()],
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "memcached",
                    "image": MEMCACHED_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    # As the memcached role runs it: args only, the entrypoint adds memcached.
                    "args": ["-m", "16", "-c", "64"],
                    "ports": [{"name": "memcached", "containerPort": 11211}],
                    "readinessProbe": {"tcpSocket": {"port": 11211}, "periodSeconds": 1},
                    "securityContext": {"runAsUser": 11211, "runAsNonRoot": True},
                }
            ],
        },
    }


def memcached_service(name: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": name},
            "ports": [{"name": "memcached", "port": 11211, "targetPort": "memcached"}],
        },
    }


def pod_view(kube: client.Client, *, namespace: str, name: str) -> dict[str, Any]:
    pod = kube.get(POD, name=name, namespace=namespace)
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    waiting = [
        s.get("state", {}).get("waiting", {}).get("reason")
        for s in pod.get("status", {}).get("containerStatuses", [])
    ]
    return {
        "node": pod["spec"].get("nodeName"),
        "phase": pod.get("status", {}).get("phase"),
        "ready": conditions.get("Ready"),
        "waiting": [w for w in waiting if w],
    }


def memcached_version(address: str, port: int) -> str:
    """Send ``version`` to memcached at ``address`` and return its answer line."""
    with socket.create_connection((address, port), timeout=2.0) as conn:
        conn.sendall(b"version\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = conn.recv(256)
            if not chunk:
                break
            reply += chunk
    return reply.decode(errors="replace").strip()


def test_memcached_pod_answers_through_a_cluster_ip(
    kube: client.Client, namespace: str, real_node: str
) -> None:
    started = time.monotonic()
    kube.create(POD, memcached_pod("cache"), namespace=namespace)
    service = kube.create(SERVICE, memcached_service("cache"), namespace=namespace)
    cluster_ip = service["spec"]["clusterIP"]

    view = wait_for(
        lambda: pod_view(kube, namespace=namespace, name="cache"),
        until=lambda v: v["ready"] == "True",
        describe=f"the memcached pod Ready on {real_node}",
        timeout=90.0,
        interval=0.5,
    )
    assert view["node"] == real_node, f"expected the pod on {real_node}, saw {view['node']}"

    # Until kube-proxy has written the Service's rules the connection is refused or hangs.
    answer = wait_for(
        lambda: memcached_version(cluster_ip, 11211),
        until=lambda a: a.startswith(VERSION_PREFIX),
        describe=f"memcached at the ClusterIP {cluster_ip}:11211 to answer {VERSION_PREFIX}…",
        timeout=30.0,
        interval=0.5,
        ignore=(OSError,),
    )
    print(f"{answer} through {cluster_ip} in {time.monotonic() - started:.1f}s")


def test_other_pods_stay_off_the_real_node(
    kube: client.Client, namespace: str, real_node: str
) -> None:
    pod = memcached_pod("plain")
    del pod["spec"]["tolerations"]
    kube.create(POD, pod, namespace=namespace)

    def reason() -> str:
        status = kube.get(POD, name="plain", namespace=namespace).get("status", {})
        for condition in status.get("conditions", []):
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                return str(condition.get("message", ""))
        return ""

    message = wait_for(reason, describe="the untolerating pod reported Unschedulable")
    # The scheduler counts the taint without naming it.
    assert "untolerated taint" in message, f"expected an untolerated taint in {message!r}"


def test_a_local_podman_image_runs_under_the_name_it_was_loaded_by(
    cluster: devcluster.Cluster, kube: client.Client, namespace: str, real_node: str
) -> None:
    # A tiny image (the pause program) known to podman only by a short name, as
    # `make docker-build IMG=name:tag` leaves one (podman calls it localhost/name:tag).
    tag = namespace[-6:]
    archive = images.pause_archive(
        binary=(cluster.bin_dir or binaries.default_bin_dir()) / binaries.PAUSE,
        name=f"localhost/devcluster-load-test:{tag}",
        out=cluster.data_dir / "node" / "images" / f"load-test-{tag}.tar",
    )
    subprocess.run(
        ["podman", "load", "--quiet", f"--input={archive}"], check=True, capture_output=True
    )
    archive.unlink()
    try:
        images.load(image=f"devcluster-load-test:{tag}", paths=nodeconfig.Paths.of(cluster.layout))
    finally:
        subprocess.run(
            ["podman", "rmi", f"localhost/devcluster-load-test:{tag}"],
            check=False,
            capture_output=True,
        )
    pod = memcached_pod("loaded")
    container = pod["spec"]["containers"][0]
    container.update(image=f"devcluster-load-test:{tag}", imagePullPolicy="Never", args=[])
    del container["readinessProbe"]
    kube.create(POD, pod, namespace=namespace)

    wait_for(
        lambda: pod_view(kube, namespace=namespace, name="loaded"),
        until=lambda v: v["ready"] == "True",
        describe=f"a pod of the loaded image devcluster-load-test:{tag} Ready (never pulled)",
        timeout=60.0,
        interval=0.5,
    )


@dataclass(frozen=True)
class Host:
    """What the machine lacks or refuses, for preflight."""

    missing: frozenset[str] = frozenset()
    refused: str | None = None
    root: bool = True


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param(Host(root=False), "the real node needs root", id="not-root"),
        pytest.param(
            Host(missing=frozenset({"containerd", "ctr"})),
            "apt-get install containerd",
            id="no-containerd",
        ),
        pytest.param(
            Host(missing=frozenset({"runc", "podman"})),
            "apt-get install podman runc",
            id="two-packages",
        ),
        pytest.param(
            Host(missing=frozenset({"cni"})),
            "apt-get install containernetworking-plugins",
            id="no-cni-plugins",
        ),
        pytest.param(
            Host(refused="unshare"),
            "the kernel refused a new network namespace (unshare --net): Operation not permitted",
            id="no-netns",
        ),
        pytest.param(
            Host(refused="iptables"),
            "the kernel refused iptables' nat table (kube-proxy's Services): "
            "Operation not permitted",
            id="no-iptables-nat",
        ),
    ],
)
def test_preflight_names_what_to_install_or_what_was_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host: Host, expected: str
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0 if host.root else 1000)
    monkeypatch.setattr(shutil, "which", lambda c: None if c in host.missing else f"/usr/bin/{c}")
    if "cni" not in host.missing:
        for plugin in nodeconfig.CNI_PLUGINS:
            (tmp_path / plugin).touch()
    monkeypatch.setattr(nodeconfig, "CNI_BIN_DIR", tmp_path)

    def fake_try(command: list[str]) -> tuple[bool, str]:
        if command[0] == host.refused:
            return False, "Operation not permitted\nmore detail on a second line"
        return True, ""

    monkeypatch.setattr(node, "_try", fake_try)

    with pytest.raises(devcluster.NodeUnavailableError) as caught:
        node.preflight()
    message = str(caught.value)
    assert expected in message, f"expected {expected!r} in {message!r}"
    assert "\n" not in message, f"expected one line, saw {message!r}"
