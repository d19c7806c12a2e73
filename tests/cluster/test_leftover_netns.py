"""``down`` removes its pods' network namespaces wherever containerd mounted them.

containerd is told to mount them inside the node's directory, which ``down`` empties.
Before that, its configuration named a key containerd 1.6 does not know, and the
namespaces went to /run/netns/cni-...: left mounted, a namespace outlives the pod, and
the pod's veth stays on the host. Any other mount of a namespace one of the node's
containers is in (a process under a runc shim of the node's containerd socket) is found
and removed: the test stands one in, a process named like a shim with that socket, in a
namespace mounted as ``ip netns add`` mounts one. Another namespace, mounted the same
way but holding nothing of the node, stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import layout, leftovers, node, nodeconfig
from testkit.helpers import wait_for

NETNS_DIR = Path("/run/netns")


def test_a_namespace_mount_is_found_by_its_inode(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_bytes(
        b"45 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw\n"
        b"48 45 0:4 net:[4026532175] /run/netns/cni-94a3 rw shared:3 - nsfs nsfs rw\n"
        b"49 45 0:4 net:[4026532999] /run/netns/other rw shared:4 - nsfs nsfs rw\n"
        b"50 27 0:4 net:[4026532175] /srv/a\\040b rw - nsfs nsfs rw\n"
    )

    seen = leftovers.netns_mounts({4026532175}, mountinfo=mountinfo)

    expected = ["/run/netns/cni-94a3", "/srv/a b"]
    assert seen == expected, f"expected both mounts of namespace 4026532175: {expected}, saw {seen}"


def shim_of(socket: Path) -> int | None:
    """The pid of the stand-in shim once it runs as one (named so, naming ``socket``)."""
    needle = os.fsencode(socket)
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            if argv.startswith(b"containerd-shim-runc-v2\0") and needle in argv:
                return int(entry.name)
    return None


def netns_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def test_containerd_mounts_pod_namespaces_inside_the_node_directory(tmp_path: Path) -> None:
    paths = nodeconfig.Paths(tmp_path / "node")

    config = nodeconfig.containerd_config(paths, registry_port=5000).splitlines()

    # The CRI plugin's key (containerd 1.6 and 1.7): <its state dir>/netns, under node/.
    assert "  netns_mounts_under_state_dir = true" in config, (
        f"expected netns_mounts_under_state_dir = true in the CRI section, saw {config}"
    )
    expected = paths.containerd_state / "io.containerd.grpc.v1.cri" / "netns"
    assert paths.netns_dir == expected, f"expected netns_dir {expected}, saw {paths.netns_dir}"


@pytest.fixture
def namespaces() -> Iterator[list[str]]:
    """Names of ``ip netns`` namespaces the test makes; any left is deleted afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and ip(8)")
    made: list[str] = []
    yield made
    for name in made:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


@pytest.mark.integration
def test_down_removes_the_namespaces_of_its_containers_only(
    tmp_path: Path, namespaces: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    where = layout.Layout(tmp_path / "données")
    paths = nodeconfig.Paths.of(where)
    paths.directory.mkdir(parents=True)
    ours, other = f"cni-dctest-{os.getpid()}", f"dctest-other-{os.getpid()}"
    for name in (ours, other):
        subprocess.run(["ip", "netns", "add", name], check=True)
        namespaces.append(name)
    # A "container": named like a runc shim of this node's containerd, in namespace `ours`,
    # and (setsid -f) not this process's child, so that it is reaped as soon as killed.
    stand_in = [sys.executable, "-c", "import time; time.sleep(600)"]
    rename = ["bash", "-c", 'exec -a containerd-shim-runc-v2 "$@"', "_"]
    command = ["ip", "netns", "exec", ours, "setsid", "-f", *rename, *stand_in]
    subprocess.run([*command, "-address", str(paths.socket)], check=True)
    shim = wait_for(
        lambda: shim_of(paths.socket),
        describe=f"the stand-in container in namespace {ours}",
        until=lambda pid: pid is not None and netns_of(pid) == os.stat(NETNS_DIR / ours).st_ino,
        timeout=10.0,
    )
    assert shim is not None
    monkeypatch.setattr(leftovers, "remove_cgroups", lambda: None)
    said: list[str] = []

    try:
        node.stop(where=where, out=said.append)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(shim, signal.SIGKILL)

    assert not Path(f"/proc/{shim}").exists(), f"expected the stand-in container {shim} killed"
    left = sorted(p.name for p in NETNS_DIR.iterdir() if p.name in (ours, other))
    assert left == [other], f"expected only {other} left in {NETNS_DIR}, saw {left}; said {said}"
    assert os.path.ismount(NETNS_DIR / other), f"expected {other} still mounted"
