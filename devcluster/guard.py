"""The iptables guard that keeps the real node's network on this machine.

The apiserver relay (:mod:`devcluster.apirelay`, 10.245.0.1:6443) and kube-proxy's
NodePorts listen on the bridge's own address, pods sit behind it, and kube-proxy turns
ClusterIPs into either. Nothing beyond the machine routes to them, but nothing stops a
neighbour that does: Linux accepts a packet for any of its addresses on any interface,
and the bridge CNI plugin turns IPv4 forwarding on. So a host on the same network that
routes 10.245.0.0/24 (or the Service range) through this one would reach the relay, and
with it the apiserver, NodePorts and pods.

:func:`devcluster.node.start` installs this guard before any of the node's processes
starts and :func:`devcluster.node.stop` removes it: a chain, :data:`CHAIN`, jumped to
first from the ``mangle`` table's INPUT and FORWARD, that drops every packet for the
pod subnet (the bridge's address included) that did not come in on the bridge or on
loopback. INPUT and FORWARD run after the nat table's DNAT, so a ClusterIP or a NodePort
is seen as what it became (the relay, a pod) and dropped as such. The ``mangle`` table,
not ``filter``: kube-proxy prepends its own jumps to filter's INPUT and FORWARD and its
KUBE-FORWARD chain accepts what it marked for masquerade (external NodePort traffic
among it) before a later filter rule would see it; no Kubernetes component writes
mangle's INPUT or FORWARD, and mangle runs before filter.

Only IPv4: the bridge has no IPv6 address and nothing listens on one.
"""

from __future__ import annotations

import subprocess

from devcluster import errors, nodeconfig

CHAIN = "DEVCLUSTER-GUARD"
TABLE = "mangle"
#: The built-in chains that jump to the guard, first thing.
HOOKS = ("INPUT", "FORWARD")
COMMENT = "devcluster: the real node network is reached from this machine only"
#: At most this many stale jumps are removed from one hook (installed twice, say).
_MAX_JUMPS = 16


def rules() -> list[list[str]]:
    """The iptables commands that install the guard, in order (on a clean table)."""
    ipt = ["iptables", "-w", "-t", TABLE]
    comment = ["-m", "comment", "--comment", COMMENT]
    return [
        [*ipt, "-N", CHAIN],
        [*ipt, "-A", CHAIN, "-i", nodeconfig.BRIDGE, "-j", "RETURN"],
        [*ipt, "-A", CHAIN, "-i", "lo", "-j", "RETURN"],
        [*ipt, "-A", CHAIN, "-d", nodeconfig.POD_SUBNET, *comment, "-j", "DROP"],
        *([*ipt, "-I", hook, "1", "-j", CHAIN] for hook in HOOKS),
    ]


def removal() -> list[list[str]]:
    """The iptables commands that remove it: each hook's jump, then the chain."""
    ipt = ["iptables", "-w", "-t", TABLE]
    return [
        *([*ipt, "-D", hook, "-j", CHAIN] for hook in HOOKS),
        [*ipt, "-F", CHAIN],
        [*ipt, "-X", CHAIN],
    ]


def _run(command: list[str]) -> tuple[bool, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return done.returncode == 0, done.stderr or done.stdout


def installed() -> bool:
    """Whether the guard's chain exists (``iptables -S`` lists it)."""
    ok, listing = _run(["iptables", "-w", "-t", TABLE, "-S", CHAIN])
    return ok and f"-N {CHAIN}" in listing.splitlines()


def remove() -> None:
    """Remove the guard, what there is of it; never raises."""
    deletions = removal()
    for command in deletions[: len(HOOKS)]:
        for _ in range(_MAX_JUMPS):
            if not _run(command)[0]:
                break
    for command in deletions[len(HOOKS) :]:
        _run(command)


def install() -> None:
    """Install the guard afresh; raise :class:`NodeUnavailableError` if iptables refuses."""
    remove()
    for command in rules():
        ok, detail = _run(command)
        if not ok:
            remove()
            first = (detail.strip().splitlines() or ["no reason given"])[0]
            raise errors.NodeUnavailableError(
                f"the kernel refused the real node's iptables guard (`{' '.join(command)}`): "
                f"{first}"
            )
