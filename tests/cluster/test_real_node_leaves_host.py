"""A real node leaves the host as it found it, on a cluster of the test's own (its own data
dir and ports; the shared cluster is not touched).

While the node runs a pod, the host's sysctls carry what its components wrote (the bridge
plugin's IPv4 forwarding, the kubelet's kernel tunables) and the iptables guard keeps a
neighbour from the apiserver relay on the bridge: a network namespace of the test's own,
linked to this host and routing the pod subnet through it, stands in for the neighbour.
After ``devcluster down`` every sysctl has its value from before, the guard is gone, and
so are the pod's network namespace and veth.

One real node per machine: skipped, with the reason, where another cluster's node runs
or where a real node cannot run here. It is slow (a node is started: tens of seconds
with the stand-in images already built, minutes the first time), hence a lane.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import devcluster
from devcluster import apirelay, guard, node, nodeconfig, sysctls

pytestmark = [pytest.mark.integration, pytest.mark.lane]

ROOT = Path(__file__).resolve().parents[2]
#: What the node writes, where the host may have had something else before.
NODE_VALUES = {
    "net/ipv4/ip_forward": "1",
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
OUTSIDE_IP = "198.51.100.6"
HOST_LINK_IP = "198.51.100.5"


def run_cli(data_dir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devcluster", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        cwd=ROOT,
    )


def host_sysctls() -> dict[str, str]:
    return {
        name: (sysctls.PROC_SYS / name).read_text().strip()
        for name in NODE_VALUES
        if (sysctls.PROC_SYS / name).exists()
    }


def links_and_namespaces() -> dict[str, list[str]]:
    """This host's network links and ``ip netns`` namespaces, by name."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    netns = Path("/run/netns")
    return {
        "links": sorted(
            line.split(":")[1].strip().split("@")[0] for line in links.stdout.splitlines()
        ),
        "netns": sorted(p.name for p in netns.iterdir()) if netns.is_dir() else [],
    }


def pause_pod(name: str) -> str:
    """A pod of the node's own pause image (never pulled): its sandbox is what makes the
    bridge plugin run (and turn forwarding on)."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeSelector": nodeconfig.node_selector(),
                "tolerations": [nodeconfig.toleration()],
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {"name": "pause", "image": nodeconfig.PAUSE_IMAGE, "imagePullPolicy": "Never"}
                ],
            },
        }
    )


def mangle_rules() -> list[str]:
    done = subprocess.run(
        ["iptables", "-w", "-t", guard.TABLE, "-S"], capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


@dataclass(frozen=True)
class Neighbour:
    """A network namespace linked to this host by a veth pair, routing the pod subnet here."""

    namespace: str
    link: str

    def reaches(self, address: str, port: int) -> bool:
        code = (
            "import socket, sys\n"
            f"try: socket.create_connection(({address!r}, {port}), timeout=1.0).close()\n"
            "except OSError: sys.exit(1)\n"
        )
        done = subprocess.run(
            ["ip", "netns", "exec", self.namespace, sys.executable, "-c", code],
            capture_output=True,
            check=False,
            timeout=30,
        )
        return done.returncode == 0


@pytest.fixture
def neighbour() -> Iterator[Neighbour]:
    made = Neighbour(namespace=f"dcl-out-{os.getpid()}", link=f"dclout{os.getpid() % 100000}")
    script = f"""
        set -e
        ip netns add {made.namespace}
        ip link add {made.link} type veth peer name eth0 netns {made.namespace}
        ip addr add {HOST_LINK_IP}/30 dev {made.link}
        ip link set {made.link} up
        ip -n {made.namespace} addr add {OUTSIDE_IP}/30 dev eth0
        ip -n {made.namespace} link set eth0 up
        ip -n {made.namespace} route add {nodeconfig.POD_SUBNET} via {HOST_LINK_IP}
    """
    try:
        subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True)
        yield made
    finally:
        subprocess.run(["ip", "link", "del", made.link], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", made.namespace], capture_output=True, check=False)


@pytest.fixture
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data dir for a cluster of this test only, stopped (real node and all) afterwards;
    should the test fail half-way, the host's sysctls are put back by hand."""
    try:
        node.preflight()
    except devcluster.NodeUnavailableError as exc:
        pytest.skip(f"real node unavailable: {exc}")
    if nodeconfig.CLAIM_FILE.exists():
        owner = nodeconfig.CLAIM_FILE.read_text().strip()
        pytest.skip(f"a real node already runs on this machine, for {owner} (one per machine)")
    before = host_sysctls()
    data_dir = tmp_path_factory.mktemp("devcluster-host")
    try:
        yield data_dir
    finally:
        run_cli(data_dir, "down", timeout=120)
        for name, value in before.items():
            if (sysctls.PROC_SYS / name).read_text().strip() != value:
                (sysctls.PROC_SYS / name).write_text(f"{value}\n")


def test_down_puts_sysctls_back_and_removes_the_guard(
    own_cluster: Path, neighbour: Neighbour
) -> None:
    before = host_sysctls()
    rules_before = mangle_rules()
    network_before = links_and_namespaces()
    changing = {n: v for n, v in NODE_VALUES.items() if before.get(n) not in (None, v)}
    if not changing:
        pytest.skip(f"this host already has every value the node writes: {before}")

    up = run_cli(own_cluster, "up", "--node", "real")

    assert up.returncode == 0, f"expected `up --node real` to succeed, saw:\n{up.stdout}{up.stderr}"
    cluster = devcluster.Cluster(own_cluster)
    cluster.kubectl("apply", "-f", "-", input=pause_pod("sandbox"))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/sandbox", "--timeout=90s")
    during = host_sysctls()
    written = {n: during[n] for n in changing}
    assert written == changing, f"expected the node to have written {changing}, saw {written}"
    assert guard.installed(), f"expected {guard.CHAIN} in the mangle table while the node runs"
    relay = (nodeconfig.GATEWAY, apirelay.PORT)
    assert not neighbour.reaches(*relay), f"expected the relay {relay} out of a neighbour's reach"
    guard.remove()  # a moment without it: the neighbour's probe is a real one
    try:
        assert neighbour.reaches(*relay), f"expected an unguarded relay {relay} reachable"
    finally:
        guard.install()

    down = run_cli(own_cluster, "down")

    assert down.returncode == 0, f"expected `down` to succeed, saw:\n{down.stdout}{down.stderr}"
    after = host_sysctls()
    assert after == before, (
        f"expected every sysctl back as before the node: {before}, saw {after}\n{down.stdout}"
    )
    assert not guard.installed(), f"expected {guard.CHAIN} removed by down"
    rules_after = mangle_rules()
    assert rules_after == rules_before, (
        f"expected the mangle table as before: {rules_before}, saw {rules_after}"
    )
    assert not sysctls.RECORD.exists(), f"expected {sysctls.RECORD} forgotten after down"
    network_after = links_and_namespaces()
    assert network_after == network_before, (
        f"expected the host's links and namespaces as before: {network_before}, saw {network_after}"
    )
