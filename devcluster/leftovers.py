"""What a real node leaves on the host once its processes stop, and removing it.

:func:`devcluster.node.stop` calls these after SIGTERM to kube-proxy, kubelet and
containerd: the containers (runc shims leave containerd's process group on purpose, so
they outlive it), the mounts under the node's directory (network namespaces, volumes,
root filesystems) and any other mount of the pods' network namespaces (their veths go
with them), the containers' cgroups, and the chains the kubelet writes into the host's
iptables (kube-proxy's own go with ``kube-proxy --cleanup``). Afterwards the host's
processes, mounts, links, cgroups and iptables are as they were before the node.

Mount points are read from /proc/self/mountinfo as bytes: a data dir's path may hold any
byte, and a mount misread is a mount ``down`` would delete through.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
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
            # fsdecode: a socket path that is not UTF-8 still compares equal to str(path).
            argv = [os.fsdecode(a) for a in (entry / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        yield int(entry.name), parent, argv


def _is_our_shim(argv: list[str], socket: Path) -> bool:
    if not argv or "containerd-shim" not in argv[0]:
        return False
    pairs = itertools.pairwise(argv)
    return any(flag == "-address" and value == str(socket) for flag, value in pairs)


def _shims_and_children(paths: nodeconfig.Paths) -> set[int]:
    """This node's runc shims and every process under them."""
    table = list(_all_processes())
    found = {pid for pid, _, argv in table if _is_our_shim(argv, paths.socket)}
    grew = True
    while grew:
        children = {pid for pid, parent, _ in table if parent in found} - found
        grew = bool(children)
        found |= children
    return found


def _netns(pid: int | str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def container_netns(paths: nodeconfig.Paths) -> set[int]:
    """The network namespaces (inode numbers) this node's containers are in; the host's
    own (hostNetwork pods) left out. Read them before :func:`kill_containers`."""
    found = {_netns(pid) for pid in _shims_and_children(paths)}
    return {inode for inode in found if inode is not None} - {_netns("self")}


def kill_containers(paths: nodeconfig.Paths) -> int:
    """SIGKILL every runc shim of this node's containerd and everything under them;
    return how many processes that was, once they are gone.

    Shims leave containerd's process group on purpose (containers outlive a containerd
    restart), so stopping containerd alone would leave every container running.
    """
    doomed = _shims_and_children(paths)
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


#: How mountinfo escapes the four bytes that would break its fields: backslash, 3 octal digits.
_ESCAPE = re.compile(rb"\\([0-7]{3})")
MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape(field: bytes) -> bytes:
    return _ESCAPE.sub(lambda m: bytes([int(m[1], 8) & 0xFF]), field)


def _mounts(mountinfo: bytes) -> Iterator[tuple[bytes, bytes, bytes]]:
    """``(root, mount point, filesystem type)`` of each mountinfo line, unescaped.

    The kernel writes paths as their bytes, UTF-8 or not, with only space, tab, newline
    and backslash escaped (``\\040``, ``\\011``, ``\\012``, ``\\134``): so the file is
    read as bytes and split on the bytes it never leaves unescaped.
    """
    for line in mountinfo.split(b"\n"):
        fields = line.split(b" ")
        if len(fields) < 5:
            continue
        # Optional fields (shared:1 ...) run from the 7th to a lone "-"; the type follows.
        separator = fields.index(b"-", 6) if b"-" in fields[6:] else len(fields) - 1
        fstype = fields[separator + 1] if separator + 1 < len(fields) else b""
        yield _unescape(fields[3]), _unescape(fields[4]), fstype


def mount_points(mountinfo: bytes) -> list[str]:
    """The mount points in ``mountinfo`` (the bytes of /proc/self/mountinfo), in order,
    as ``str`` the way every path here is (``os.fsdecode``: a byte that is not UTF-8
    becomes a surrogate that ``umount`` gets back as the same byte)."""
    return [os.fsdecode(point) for _, point, _ in _mounts(mountinfo)]


def _read(mountinfo: Path) -> bytes:
    try:
        return mountinfo.read_bytes()
    except OSError:
        return b""


def mounts_under(directory: Path, *, mountinfo: Path = MOUNTINFO) -> list[str]:
    """Mount points at or below ``directory``, deepest first."""
    prefix = os.fsencode(directory)
    inside = {
        point
        for _, point, _ in _mounts(_read(mountinfo))
        if point == prefix or point.startswith(prefix + b"/")
    }
    return [os.fsdecode(p) for p in sorted(inside, key=lambda p: p.count(b"/"), reverse=True)]


def netns_mounts(inodes: set[int], *, mountinfo: Path = MOUNTINFO) -> list[str]:
    """Where the network namespaces ``inodes`` are mounted (``ip netns`` style), anywhere."""
    wanted = {f"net:[{inode}]".encode() for inode in inodes}
    found = [
        os.fsdecode(point)
        for root, point, fstype in _mounts(_read(mountinfo))
        if fstype == b"nsfs" and root in wanted
    ]
    return sorted(set(found))


def unmount_netns(inodes: set[int]) -> None:
    """Unmount the network namespaces ``inodes`` wherever they are mounted, and remove the
    empty file each was mounted on.

    Mounted, a namespace outlives the pod's processes, and with it the pod's veth (the
    host's end stays on the bridge). The node's containerd mounts them inside node/
    (:attr:`devcluster.nodeconfig.Paths.netns_dir`), but one started by an older
    devcluster, whose containerd configuration had no effect there, put them under
    /run/netns; any mount of the namespace is found by its inode, wherever it is.
    """
    for point in netns_mounts(inodes):
        ok, _ = _quietly(["umount", "--lazy", point])
        path = Path(point)
        # As `ip netns del`: the namespace was mounted on an empty file made for it.
        with contextlib.suppress(OSError):
            if ok and not os.path.ismount(path) and path.is_file() and path.stat().st_size == 0:
                path.unlink()


#: Passes of :func:`unmount_all`: mounts stacked on one point go one per pass.
UNMOUNT_PASSES = 8


def unmount_all(directory: Path) -> None:
    """Unmount everything at or below ``directory``, deepest first."""
    for _ in range(UNMOUNT_PASSES):
        left = mounts_under(directory)
        if not left:
            return
        for point in left:
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
