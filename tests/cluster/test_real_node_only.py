"""The embedded cluster as a kind replacement: a cluster of the test's own whose real node
takes every pod (``devcluster up --node real --kwok off``), so workloads written for a
real cluster run unchanged, in real containers.

- ``kubectl logs``, ``exec``, ``port-forward`` and the kubelet's metrics reach a pod of
  the real node: the apiserver dials the kubelet at the node's InternalIP (the bridge),
  verifies its serving certificate against the cluster CA, and presents its kubelet
  client certificate;
- the same through ``kubernetes.core.k8s_exec`` and ``k8s_log`` in a role;
- a Deployment without nodeSelector or toleration becomes Available, its pods running
  on the real node (kwok's node is removed in this mode); ``busybox`` with its implied
  ``:latest`` and ``imagePullPolicy: Always`` runs from the stand-in, found by the pull
  through the node registry;
- a pull of an image the node does not hold fails with the image's name and the command
  that loads it, in the pod's status and its event.

One real node per machine: skipped, with the reason, where another cluster's node runs
or a real node cannot run here. A lane: it starts a control plane and a node (about 40 s
with the stand-in images built).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import devcluster
from devcluster import binaries, node, nodeconfig
from testkit.helpers import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.lane]

MEMCACHED = "docker.io/library/memcached:1.6.38-alpine"
LOG_LINE = "hello from the real node"


@pytest.fixture(scope="module")
def only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devcluster.Cluster]:
    """A cluster of this module, its real node taking every pod; stopped afterwards."""
    try:
        node.preflight()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    if nodeconfig.CLAIM_FILE.exists():
        owner = nodeconfig.CLAIM_FILE.read_text().strip()
        pytest.skip(f"a real node already runs on this machine, for {owner} (one per machine)")
    devcluster.build(skip_overridden=True, node=True)
    cluster = devcluster.Cluster(
        tmp_path_factory.mktemp("devcluster-only"), prefer_default_ports=False
    )
    try:
        cluster.start()
        try:
            cluster.add_real_node(mode=nodeconfig.Placement.ONLY)
        except devcluster.NodeUnavailableError as exc:
            pytest.skip(f"real node unavailable: {exc}")
        yield cluster
    finally:
        cluster.stop()


def apply(cluster: devcluster.Cluster, manifest: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))


def pod(name: str, *, image: str, command: list[str] | None = None) -> dict[str, Any]:
    """A pod as a role would write it: no nodeSelector, no toleration, no pull policy."""
    container: dict[str, Any] = {"name": "main", "image": image}
    if command:
        container["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]},
    }


def pod_state(cluster: devcluster.Cluster, name: str) -> dict[str, Any]:
    raw = json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout)
    conditions = {c["type"]: c["status"] for c in raw["status"].get("conditions", [])}
    waiting = [
        s.get("state", {}).get("waiting", {}) for s in raw["status"].get("containerStatuses", [])
    ]
    return {
        "node": raw["spec"].get("nodeName"),
        "ready": conditions.get("Ready"),
        "waiting": [w for w in waiting if w],
    }


def ready_pod(cluster: devcluster.Cluster, name: str) -> dict[str, Any]:
    state = wait_for(
        lambda: pod_state(cluster, name),
        until=lambda s: s["ready"] == "True",
        describe=f"pod {name} Ready",
        timeout=90.0,
        interval=0.5,
    )
    assert state["node"] == nodeconfig.NODE_NAME, f"expected {name} on the real node: {state}"
    return state


def test_logs_exec_port_forward_and_metrics_reach_the_real_node(
    only: devcluster.Cluster,
) -> None:
    apply(only, pod("talk", image="busybox", command=["sh", "-c", f"echo {LOG_LINE}; sleep 3600"]))
    apply(only, pod("cache", image=MEMCACHED))
    ready_pod(only, "talk")
    ready_pod(only, "cache")

    logs = wait_for(
        lambda: only.kubectl("logs", "talk").stdout,
        until=lambda text: LOG_LINE in text,
        describe=f"`kubectl logs` to show {LOG_LINE!r}",
    )
    assert logs.strip() == LOG_LINE, f"expected only {LOG_LINE!r}, saw {logs!r}"

    done = only.kubectl("exec", "talk", "--", "sh", "-c", "echo exec in $(hostname)")
    assert done.stdout.strip() == "exec in talk", f"expected the pod's shell, saw {done.stdout!r}"

    kubectl = binaries.resolve(binaries.KUBECTL, bin_dir=only.bin_dir)
    forward = subprocess.Popen(
        [str(kubectl), f"--kubeconfig={only.kubeconfig}", "port-forward", "pod/cache", ":11211"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert forward.stdout is not None
        first = forward.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+) -> 11211", first)
        assert match, f"expected `Forwarding from 127.0.0.1:<port> -> 11211`, saw {first!r}"
        with socket.create_connection(("127.0.0.1", int(match[1])), timeout=5.0) as conn:
            conn.sendall(b"version\r\n")
            answer = conn.recv(256).decode(errors="replace")
        assert answer.startswith("VERSION 1.6."), f"expected memcached's VERSION, saw {answer!r}"
    finally:
        forward.terminate()
        forward.wait(timeout=10)

    metrics = only.kubectl(
        "get", "--raw", f"/api/v1/nodes/{nodeconfig.NODE_NAME}/proxy/metrics/resource"
    ).stdout
    assert 'container_cpu_usage_seconds_total{container="main",namespace="default",pod="talk"}' in (
        metrics
    ), f"expected the talk pod's CPU in the kubelet's resource metrics:\n{metrics[:2000]}"


def test_an_unchanged_deployment_becomes_available_on_the_real_node(
    only: devcluster.Cluster,
) -> None:
    template = pod("plain", image="memcached:1.6.38-alpine")
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "plain", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "plain"}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }
    apply(only, deployment)
    only.kubectl("rollout", "status", "deployment/plain", "--timeout=90s")
    pods = json.loads(only.kubectl("get", "pods", "-l", "app=plain", "-o", "json").stdout)
    seen = {(p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods["items"]}
    assert seen == {(nodeconfig.NODE_NAME, "Running")}, f"expected Running on the real node: {seen}"
    nodes = only.kubectl("get", "nodes", "-o", "name").stdout.split()
    assert nodes == [f"node/{nodeconfig.NODE_NAME}"], f"expected the real node alone: {nodes}"


def test_a_missing_image_names_the_command_that_loads_it(only: devcluster.Cluster) -> None:
    apply(only, pod("missing", image="busybox:0.0-not-loaded"))
    state = wait_for(
        lambda: pod_state(only, "missing"),
        until=lambda s: any(
            w.get("reason") in ("ErrImagePull", "ImagePullBackOff") for w in s["waiting"]
        ),
        describe="pod missing in ErrImagePull",
        timeout=60.0,
        interval=0.5,
    )
    reference = "docker.io/library/busybox:0.0-not-loaded"
    load = f"devcluster --data-dir {only.data_dir} load {reference}"
    events = only.kubectl(
        "get", "events", "--field-selector=involvedObject.name=missing", "-o", "json"
    ).stdout
    messages = [e["message"] for e in json.loads(events)["items"] if e["reason"] == "Failed"]
    assert any(f"{reference} is not on the real node" in m and load in m for m in messages), (
        f"expected an event naming {reference} and `{load}`, saw {messages} (pod: {state})"
    )


ROLE_TASKS = """\
- name: Run a command in the pod
  kubernetes.core.k8s_exec:
    namespace: default
    pod: talk
    command: cat /etc/hostname
  register: probe_exec

- name: Read the pod's log
  kubernetes.core.k8s_log:
    namespace: default
    name: talk
  register: probe_log

- name: Check what exec and the log returned
  ansible.builtin.assert:
    that:
      - probe_exec.rc == 0
      - probe_exec.stdout | trim == 'talk'
      - "'{log_line}' in probe_log.log_lines"
    fail_msg: "exec: {{{{ probe_exec }}}}; log: {{{{ probe_log.log_lines }}}}"
"""


def test_k8s_exec_and_k8s_log_in_a_role(only: devcluster.Cluster, tmp_path: Path) -> None:
    apply(only, pod("talk", image="busybox", command=["sh", "-c", f"echo {LOG_LINE}; sleep 3600"]))
    ready_pod(only, "talk")
    tasks = tmp_path / "roles" / "probe" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text(ROLE_TASKS.format(log_line=LOG_LINE))
    (tmp_path / "play.yml").write_text(
        textwrap.dedent(
            """\
            - name: Probe a pod of the real node
              hosts: localhost
              connection: local
              gather_facts: false
              roles: [probe]
            """
        )
    )
    playbook = Path(sys.executable).parent / "ansible-playbook"
    done = subprocess.run(
        [str(playbook), "-i", "localhost,", "play.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={
            "PATH": f"{playbook.parent}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "K8S_AUTH_KUBECONFIG": str(only.kubeconfig),
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_NOCOLOR": "1",
        },
    )
    assert done.returncode == 0, f"expected the role to pass:\n{done.stdout[-3000:]}{done.stderr}"
    assert "failed=0" in done.stdout, f"expected failed=0 in:\n{done.stdout[-2000:]}"
