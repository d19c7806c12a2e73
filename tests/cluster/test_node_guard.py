"""The real node's network is reached from this machine only: the iptables guard drops
packets for the pod subnet (the bridge's address, where the apiserver relay and the
NodePorts listen, and the pods behind it) that come in on any interface but the bridge
and loopback, and ``down`` removes it without a trace.

The rules are checked twice: read by a small model of iptables (what each hook does to
a packet; that removal undoes installation), and as root in the kernel, inside network
namespaces of the test's own: a "host" with the bridge, the relay's port, a NodePort and
a ClusterIP DNAT'd (the NodePort also masqueraded) as kube-proxy does it, a "pod" on the
bridge, and an "outside" neighbour that routes the pod subnet and the Service range
through the host. Nothing of this machine's own network or iptables is touched.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devcluster import apirelay, components, guard, nodeconfig
from testkit.helpers import wait_for

# -- a model of the rules ------------------------------------------------------------------

Table = dict[str, list[list[str]]]


def apply(table: Table, command: list[str]) -> None:
    """What one iptables command does to a table (the subset the guard uses)."""
    assert command[:4] == ["iptables", "-w", "-t", guard.TABLE], f"unexpected command {command}"
    op, chain, *rest = command[4:]
    if op == "-N":
        assert chain not in table, f"expected {chain} new, saw it exist"
        table[chain] = []
    elif op == "-A":
        table[chain].append(rest)
    elif op == "-I":
        table.setdefault(chain, []).insert(int(rest[0]) - 1, rest[1:])
    elif op == "-D":
        table[chain].remove(rest)
    elif op == "-F":
        table[chain].clear()
    elif op == "-X":
        assert table[chain] == [], f"expected {chain} empty before -X, saw {table[chain]}"
        del table[chain]
    else:
        raise AssertionError(f"unexpected iptables operation {op}")


def option(rule: list[str], name: str) -> str | None:
    return rule[rule.index(name) + 1] if name in rule else None


def verdict(table: Table, *, hook: str, interface: str, destination: str) -> str:
    """``dropped`` or ``passed`` for a packet reaching ``hook`` (after DNAT)."""
    for rule in table.get(hook, []):
        target = option(rule, "-j")
        if target not in table:
            continue
        for step in table[target]:
            if option(step, "-i") not in (None, interface):
                continue
            subnet = option(step, "-d")
            if subnet is not None and ipaddress.ip_address(destination) not in (
                ipaddress.ip_network(subnet)
            ):
                continue
            if option(step, "-j") == "DROP":
                return "dropped"
            break  # RETURN
    return "passed"


def installed_model() -> Table:
    table: Table = {"INPUT": [["-j", "SOMETHING-ELSE"]], "FORWARD": []}
    for command in guard.rules():
        apply(table, command)
    return table


POD_IP = "10.245.0.7"


@pytest.mark.parametrize(
    ("hook", "interface", "destination", "expected"),
    [
        pytest.param("INPUT", "eth0", nodeconfig.GATEWAY, "dropped", id="relay-from-outside"),
        pytest.param("FORWARD", "eth0", POD_IP, "dropped", id="nodeport-or-pod-from-outside"),
        pytest.param("INPUT", "podman0", nodeconfig.GATEWAY, "dropped", id="another-bridge"),
        pytest.param("INPUT", nodeconfig.BRIDGE, nodeconfig.GATEWAY, "passed", id="pod-to-relay"),
        pytest.param("FORWARD", nodeconfig.BRIDGE, POD_IP, "passed", id="pod-to-pod"),
        pytest.param("INPUT", "lo", nodeconfig.GATEWAY, "passed", id="host-to-relay"),
        pytest.param("INPUT", "eth0", "192.0.2.2", "passed", id="host-traffic-untouched"),
        pytest.param("FORWARD", "eth0", "10.246.0.1", "passed", id="other-forwarding-untouched"),
    ],
)
def test_rules_drop_only_outside_packets_for_the_pod_subnet(
    hook: str, interface: str, destination: str, expected: str
) -> None:
    seen = verdict(installed_model(), hook=hook, interface=interface, destination=destination)

    assert seen == expected, (
        f"expected {hook} on {interface} to {destination} {expected}, saw {seen}"
    )


def test_the_guard_runs_first_in_mangle() -> None:
    table = installed_model()

    firsts = {hook: option(table[hook][0], "-j") for hook in guard.HOOKS}

    assert guard.TABLE == "mangle", (
        f"expected the mangle table (before kube-proxy's filter), saw {guard.TABLE}"
    )
    assert firsts == dict.fromkeys(guard.HOOKS, guard.CHAIN), (
        f"expected {guard.CHAIN} first in {guard.HOOKS}, saw {firsts}"
    )


def test_removal_undoes_installation() -> None:
    table = installed_model()

    for command in guard.removal():
        apply(table, command)

    expected = {"INPUT": [["-j", "SOMETHING-ELSE"]], "FORWARD": []}
    assert table == expected, f"expected the table as before the guard, saw {table}"


# -- the kernel, in network namespaces of the test's own (root) ----------------------------

OUTSIDE_IP = "198.51.100.2"
HOST_LINK_IP = "198.51.100.1"
POD_NS_IP = "10.245.0.2"
NODEPORT = 30080
POD_PORT = 8080
CLUSTER_IP = "10.0.0.1"


@dataclass(frozen=True)
class Net:
    """Three namespaces: ``host`` (bridge, relay port, DNAT), ``pod``, ``outside``."""

    host: str
    pod: str
    outside: str

    def run(self, namespace: str, *command: str, check: bool = True) -> str:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, *command],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"expected `{' '.join(command)}` in {namespace} to succeed, saw "
                f"{done.returncode}: {done.stderr.strip()}"
            )
        return done.stdout

    def python(self, namespace: str, code: str, *, check: bool = True) -> str:
        return self.run(namespace, sys.executable, "-c", code, check=check)

    def connects(self, namespace: str, address: str, port: int) -> bool:
        code = (
            "import socket, sys\n"
            f"try: socket.create_connection(({address!r}, {port}), timeout=1.0).close()\n"
            "except OSError: sys.exit(1)\n"
        )
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", code],
            capture_output=True,
            check=False,
            timeout=30,
        )
        return done.returncode == 0


LISTENER = """
import socket, sys
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
while True:
    server.accept()[0].close()
"""


def setup(net: Net) -> None:
    for name in (net.host, net.pod, net.outside):
        subprocess.run(["ip", "netns", "add", name], check=True)
    script = f"""
        set -e
        ip -n {net.host} link set lo up
        ip -n {net.pod} link set lo up
        ip -n {net.outside} link set lo up
        ip -n {net.host} link add {nodeconfig.BRIDGE} type bridge
        ip -n {net.host} addr add {nodeconfig.GATEWAY}/24 dev {nodeconfig.BRIDGE}
        ip -n {net.host} link set {nodeconfig.BRIDGE} up
        ip -n {net.host} link add vpod type veth peer name eth0 netns {net.pod}
        ip -n {net.host} link set vpod master {nodeconfig.BRIDGE} up
        ip -n {net.pod} addr add {POD_NS_IP}/24 dev eth0
        ip -n {net.pod} link set eth0 up
        ip -n {net.pod} route add {components.SERVICE_CIDR} via {nodeconfig.GATEWAY}
        ip -n {net.host} link add eth0 type veth peer name eth0 netns {net.outside}
        ip -n {net.host} addr add {HOST_LINK_IP}/30 dev eth0
        ip -n {net.host} link set eth0 up
        ip -n {net.outside} addr add {OUTSIDE_IP}/30 dev eth0
        ip -n {net.outside} link set eth0 up
        ip -n {net.outside} route add {nodeconfig.POD_SUBNET} via {HOST_LINK_IP}
        ip -n {net.outside} route add {components.SERVICE_CIDR} via {HOST_LINK_IP}
        ip netns exec {net.host} sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
        ip netns exec {net.host} iptables -w -t nat -A PREROUTING -d {nodeconfig.GATEWAY} \\
            -p tcp --dport {NODEPORT} -j DNAT --to-destination {POD_NS_IP}:{POD_PORT}
        ip netns exec {net.host} iptables -w -t nat -A PREROUTING -d {CLUSTER_IP} \\
            -p tcp --dport 443 -j DNAT --to-destination {nodeconfig.GATEWAY}:{apirelay.PORT}
        ip netns exec {net.host} iptables -w -t nat -A POSTROUTING -o {nodeconfig.BRIDGE} \\
            ! -s {nodeconfig.POD_SUBNET} -m conntrack --ctstate DNAT -j MASQUERADE
    """
    subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True)


@pytest.fixture
def net() -> Iterator[Net]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces and iptables need root")
    missing = [c for c in ("ip", "iptables") if shutil.which(c) is None]
    if missing:
        pytest.skip(f"not installed: {missing} (apt-get install iproute2 iptables)")
    suffix = f"{os.getpid()}"
    made = Net(host=f"dcg-host-{suffix}", pod=f"dcg-pod-{suffix}", outside=f"dcg-out-{suffix}")
    listeners: list[subprocess.Popen[bytes]] = []
    try:
        setup(made)
        for namespace, address, port in (
            (made.host, nodeconfig.GATEWAY, apirelay.PORT),
            (made.pod, POD_NS_IP, POD_PORT),
        ):
            serve = [sys.executable, "-c", LISTENER, address, str(port)]
            listeners.append(subprocess.Popen(["ip", "netns", "exec", namespace, *serve]))
            wait_for(
                functools.partial(made.connects, namespace, address, port),
                describe=f"a listener on {address}:{port} in {namespace}",
                timeout=10.0,
            )
        yield made
    finally:
        for listener in listeners:
            listener.kill()
            listener.wait()
        for name in (made.host, made.pod, made.outside):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


#: What the neighbour tries: name → (address, port). Pods themselves answer no one
#: outside (no default route), but a NodePort is masqueraded to them as kube-proxy does.
OUTSIDE_PROBES = {
    "relay": (nodeconfig.GATEWAY, apirelay.PORT),
    "nodeport": (nodeconfig.GATEWAY, NODEPORT),
    "clusterip-to-relay": (CLUSTER_IP, 443),
}


def reached_from_outside(net: Net) -> dict[str, bool]:
    return {name: net.connects(net.outside, *target) for name, target in OUTSIDE_PROBES.items()}


INSIDE_PROBES = {
    "host-to-relay": ("host", nodeconfig.GATEWAY, apirelay.PORT),
    "host-to-nodeport-pod": ("host", POD_NS_IP, POD_PORT),
    "pod-to-relay": ("pod", nodeconfig.GATEWAY, apirelay.PORT),
    "pod-to-clusterip": ("pod", CLUSTER_IP, 443),
}


def reached_from_inside(net: Net) -> dict[str, bool]:
    return {
        name: net.connects(getattr(net, where), address, port)
        for name, (where, address, port) in INSIDE_PROBES.items()
    }


GUARD = "from devcluster import guard; guard.{}(); print(guard.installed())"


@pytest.mark.integration
def test_the_kernel_drops_what_comes_from_outside_and_removal_restores(
    net: Net, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    exposed = reached_from_outside(net)
    assert exposed == dict.fromkeys(OUTSIDE_PROBES, True), (
        f"expected the unguarded topology reachable from outside (else this proves nothing), "
        f"saw {exposed}"
    )
    before = net.run(net.host, "iptables-save", "-t", guard.TABLE)

    said = net.python(net.host, GUARD.format("install")).strip()

    assert said == "True", f"expected the guard installed, saw {said!r}"
    guarded = reached_from_outside(net)
    assert guarded == dict.fromkeys(OUTSIDE_PROBES, False), (
        f"expected nothing of the node reachable from outside, saw {guarded}"
    )
    inside = reached_from_inside(net)
    assert inside == dict.fromkeys(INSIDE_PROBES, True), (
        f"expected the host and the pods to reach everything, saw {inside}"
    )

    said = net.python(net.host, GUARD.format("remove")).strip()

    assert said == "False", f"expected the guard removed, saw {said!r}"
    after = net.run(net.host, "iptables-save", "-t", guard.TABLE)
    strip = [line for line in before.splitlines() if not line.startswith("#")]
    seen = [line for line in after.splitlines() if not line.startswith("#")]
    assert seen == strip, f"expected the mangle table as before:\n{before}\nsaw:\n{after}"
    again = reached_from_outside(net)
    assert again == dict.fromkeys(OUTSIDE_PROBES, True), f"expected all open again, saw {again}"


@pytest.mark.integration
def test_installing_twice_leaves_one_guard(net: Net, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    net.python(net.host, GUARD.format("install"))

    net.python(net.host, GUARD.format("install"))

    rules = net.run(net.host, "iptables", "-w", "-t", guard.TABLE, "-S")
    jumps = [line for line in rules.splitlines() if line.endswith(f"-j {guard.CHAIN}")]
    expected = [f"-A {hook} -j {guard.CHAIN}" for hook in guard.HOOKS]
    assert sorted(jumps) == sorted(expected), f"expected one jump per hook, saw {jumps}"
