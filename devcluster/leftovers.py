"""What a real node leaves on the host once its processes stop, and removing it.

:func:`devcluster.node.stop` calls these after SIGTERM to kube-proxy, kubelet and
containerd: the containers (runc shims leave containerd's process group on purpose, so
they outlive it), the mounts under the node's directory (network namespaces, volumes,
root filesystems), the containers' cgroups, and the chains the kubelet writes into the
host's iptables (kube-proxy's own go with ``kube-proxy --cleanup``). Afterwards the
host's processes, mounts, cgroups and iptables are as they were before the node.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from devcluster import images, nodeconfig, polling


def _quietly(command: list[str]) -> tuple[bool, str]:
    """Run a clean-up command; ``(succeeded, its output)``, never an exception."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return done.returncode == 0, done.stdout


def _all_processes() -> Iterator[tuple[int, int, list[str]]]:
    """``(pid, parent pid, argv)`` of every process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        yield int(entry.name), parent, argv


def _is_our_shim(argv: list[str], socket: Path) -> bool:
    if not argv or "containerd-shim" not in argv[0]:
        return False
    pairs = itertools.pairwise(argv)
    return any(flag == "-address" and value == str(socket) for flag, value in pairs)


def kill_containers(paths: nodeconfig.Paths) -> int:
    """SIGKILL every runc shim of this node's containerd and everything under them;
    return how many processes that was, once they are gone.

    Shims leave containerd's process group on purpose (containers outlive a containerd
    restart), so stopping containerd alone would leave every container running.
    """
    table = list(_all_processes())
    doomed = {pid for pid, _, argv in table if _is_our_shim(argv, paths.socket)}
    grew = True
    while grew:
        children = {pid for pid, parent, _ in table if parent in doomed} - doomed
        grew = bool(children)
        doomed |= children
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    polling.wait_until(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in doomed), timeout=5.0
    )
    return len(doomed)


def remove_cgroups() -> None:
    """Remove the containers' empty cgroups (cgroupfs driver: ``<hierarchy>/k8s.io/<id>``).

    One real node per machine, so the CRI namespace's cgroups are all ours; a cgroup
    that still holds a process refuses rmdir and stays.
    """
    for parent in Path("/sys/fs/cgroup").glob(f"*/{images.NAMESPACE}"):
        for child in sorted(parent.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        with contextlib.suppress(OSError):
            parent.rmdir()


def mounts_under(directory: Path) -> list[str]:
    """Mount points at or below ``directory``, deepest first."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    prefix = str(directory)
    # Field 5 is the mount point, with spaces and the like octal-escaped.
    points = [line.split()[4].encode().decode("unicode_escape") for line in lines]
    inside = [p for p in points if p == prefix or p.startswith(prefix + "/")]
    return sorted(set(inside), key=lambda p: p.count("/"), reverse=True)


def unmount_all(directory: Path) -> None:
    for point in mounts_under(directory):
        # Lazy: a mount a dying process still holds goes as soon as it lets go.
        _quietly(["umount", "--lazy", point])


#: The chains the kubelet writes into the host's iptables (kube-proxy --cleanup removes its own).
KUBELET_CHAINS = ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT")


def remove_kubelet_chains() -> None:
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table in ("filter", "nat", "mangle"):
            ok, listing = _quietly([tool, "-t", table, "-S"])
            if not ok:
                continue
            for rule in listing.splitlines():
                words = shlex.split(rule)
                jumps = words[words.index("-j") + 1] if "-j" in words[:-1] else ""
                if words[:1] == ["-A"] and jumps in KUBELET_CHAINS:
                    _quietly([tool, "-t", table, "-D", *words[1:]])
            for chain in KUBELET_CHAINS:
                if f"-N {chain}" in listing.splitlines():
                    _quietly([tool, "-t", table, "-F", chain])
                    _quietly([tool, "-t", table, "-X", chain])
