"""The real node's lifecycle: check the machine, start containerd, kubelet and kube-proxy
beside a running control plane, and stop them again, leaving nothing behind.

``devcluster up --node real`` (:meth:`devcluster.cluster.Cluster.add_real_node`) calls
:func:`start`; ``devcluster down`` calls :func:`stop` before stopping the control plane,
and ``devcluster down --node real`` calls it alone. Nothing of the control plane is
restarted: the node registers through the apiserver like any kubelet. What each
component is told lives in :mod:`devcluster.nodeconfig`; the images it runs come from
:mod:`devcluster.images`.

What cannot work here fails at once, in one line (:class:`NodeUnavailableError`): a
missing package names the Debian package to install, a kernel refusal names what was
refused. Everything else that goes wrong while starting raises :class:`StartError`
with the failing component's log tail, within the deadline: it never hangs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from devcluster import (
    api,
    apirelay,
    binaries,
    certs,
    components,
    errors,
    guard,
    health,
    images,
    layout,
    leftovers,
    nodeconfig,
    pins,
    placement,
    polling,
    ports,
    processes,
    sysctls,
)

Printer = Callable[[str], None]

#: command → the Debian package that provides it (what the one-line error names).
PACKAGES = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "ip": "iproute2",
    "unshare": "util-linux",
    "umount": "mount",
    "podman": "podman",
    "debootstrap": "debootstrap",
}


def _refused(what: str, detail: str) -> errors.NodeUnavailableError:
    first = (detail.strip().splitlines() or ["no reason given"])[0]
    return errors.NodeUnavailableError(f"the kernel refused {what}: {first}")


def _try(command: list[str]) -> tuple[bool, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return done.returncode == 0, done.stderr or done.stdout


def preflight() -> None:
    """Raise :class:`NodeUnavailableError` (one line) if a real node cannot run here."""
    if os.geteuid() != 0:
        raise errors.NodeUnavailableError(
            "the real node needs root (containerd, kubelet and kube-proxy manage mounts, "
            "network namespaces and iptables); run devcluster as root"
        )
    missing = sorted({PACKAGES[c] for c in PACKAGES if shutil.which(c) is None})
    missing += [
        "containernetworking-plugins"
        for p in nodeconfig.CNI_PLUGINS
        if not (nodeconfig.CNI_BIN_DIR / p).is_file()
    ][:1]
    if missing:
        raise errors.NodeUnavailableError(
            f"the real node needs Debian packages that are not installed: "
            f"apt-get install {' '.join(missing)}"
        )
    try:
        filesystems = Path("/proc/filesystems").read_text()
    except OSError:
        filesystems = ""
    if "overlay" not in filesystems.split():
        ok, detail = _try(["modprobe", "overlay"])
        if not ok:
            raise _refused("the overlay filesystem (containerd's snapshotter)", detail)
    ok, detail = _try(["unshare", "--net", "true"])
    if not ok:
        raise _refused("a new network namespace (unshare --net)", detail)
    ok, detail = _try(["iptables", "-t", "nat", "-S", "OUTPUT"])
    if not ok:
        raise _refused("iptables' nat table (kube-proxy's Services)", detail)


def running(where: layout.Layout) -> bool:
    """Whether this data dir's real node processes are all alive."""
    paths = nodeconfig.Paths.of(where)
    if paths.read_state() is None:
        return False
    for name in nodeconfig.ORDER:
        handle = processes.read(where.pid_file(name))
        if handle is None or not processes.alive(handle):
            return False
    return True


def _claim_owner() -> Path | None:
    try:
        return Path(nodeconfig.CLAIM_FILE.read_text().strip())
    except OSError:
        return None


def _check_claim(where: layout.Layout) -> None:
    owner = _claim_owner()
    if owner is None or owner == where.data_dir:
        return
    other = processes.read(layout.Layout(owner).pid_file(nodeconfig.CONTAINERD))
    if other is not None and processes.alive(other):
        raise errors.NodeUnavailableError(
            f"a real node already runs on this machine, for the cluster in {owner} (one per "
            f"machine: kube-proxy owns the host's iptables Service chains); stop it with "
            f"`devcluster --data-dir {owner} down --node real`"
        )


def _write_claim(where: layout.Layout) -> None:
    nodeconfig.CLAIM_FILE.parent.mkdir(parents=True, exist_ok=True)
    nodeconfig.CLAIM_FILE.write_text(f"{where.data_dir}\n")


def _ensure_bridge() -> None:
    # The kubelet wants its node IP on a local interface before any pod exists, so the
    # bridge (which the CNI plugin would otherwise create with the first pod) and its
    # gateway address are made here. The plugin finds them and adopts them.
    if not Path(f"/sys/class/net/{nodeconfig.BRIDGE}").exists():
        ok, detail = _try(["ip", "link", "add", nodeconfig.BRIDGE, "type", "bridge"])
        if not ok:
            raise _refused(f"creating the bridge {nodeconfig.BRIDGE}", detail)
    ok, detail = _try(["ip", "-o", "addr", "show", "dev", nodeconfig.BRIDGE])
    if f"{nodeconfig.GATEWAY}/" not in detail:
        prefix = nodeconfig.POD_SUBNET.split("/")[1]
        ok, detail = _try(
            ["ip", "addr", "add", f"{nodeconfig.GATEWAY}/{prefix}", "dev", nodeconfig.BRIDGE]
        )
        if not ok:
            raise _refused(f"an address on {nodeconfig.BRIDGE}", detail)
    ok, detail = _try(["ip", "link", "set", nodeconfig.BRIDGE, "up"])
    if not ok:
        raise _refused(f"bringing {nodeconfig.BRIDGE} up", detail)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    except OSError:
        return "(no log)"


def _wait(
    *, where: layout.Layout, deadline: float, what: str, predicate: Callable[[], bool]
) -> None:
    """Wait for ``predicate``; fail fast, with its log tail, if a node component exits."""
    dead: list[str] = []

    def done() -> bool:
        for name in nodeconfig.ORDER:
            handle = processes.read(where.pid_file(name))
            if handle is not None and not processes.alive(handle):
                dead.append(name)
                return True
        return predicate()

    ok = polling.wait_until(done, timeout=max(0.0, deadline - time.monotonic()), interval=0.2)
    if dead:
        log = where.log_file(dead[0])
        raise errors.StartError(
            f"{dead[0]} exited while waiting for {what}; last lines of {log}:\n{_tail(log)}"
        )
    if not ok:
        raise errors.StartError(
            f"timed out waiting for {what}; logs are in {where.log_file('').parent}"
        )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _relay_answers() -> bool:
    with (
        contextlib.suppress(OSError),
        socket.create_connection((nodeconfig.GATEWAY, apirelay.PORT), timeout=1.0),
    ):
        return True
    return False


def _containerd_answers(paths: nodeconfig.Paths) -> bool:
    ctr = shutil.which("ctr") or "ctr"
    ok, _ = _try([ctr, f"--address={paths.socket}", "version"])
    return ok


def _write_configs(
    *,
    where: layout.Layout,
    paths: nodeconfig.Paths,
    chosen: nodeconfig.Ports,
    mode: nodeconfig.Placement,
) -> None:
    for directory in (
        paths.containerd_root,
        paths.containerd_state,
        paths.cni_conf_dir,
        paths.cni_ipam_dir,
        paths.netns_dir,
        paths.kubelet_root,
        paths.pod_logs,
        paths.images_dir,
    ):
        directory.mkdir(parents=True, exist_ok=True)
    paths.containerd_config.write_text(
        nodeconfig.containerd_config(paths, registry_port=chosen.registry)
    )
    network = nodeconfig.cni_network(paths)
    (paths.cni_conf_dir / "10-devcluster.conflist").write_text(json.dumps(network, indent=2))
    # JSON is YAML: both configuration loaders accept it.
    # A data dir from before the kubelet API's certificates gets them now.
    certs.ensure_kubelet_certs(
        where.pki, kwok=components.KWOK_SERVER, node=nodeconfig.KUBELET_SERVER
    )
    kubelet = nodeconfig.kubelet_config(paths=paths, ports=chosen, pki=where.pki, placement=mode)
    paths.kubelet_config.write_text(json.dumps(kubelet, indent=2) + "\n")
    proxy = nodeconfig.proxy_config(kubeconfig=where.components_kubeconfig, ports=chosen)
    paths.proxy_config.write_text(json.dumps(proxy, indent=2) + "\n")


def _load_images(
    *,
    paths: nodeconfig.Paths,
    bin_dir: Path | None,
    stand_ins: list[images.StandIn],
    out: Printer,
) -> None:
    pause = (bin_dir or binaries.default_bin_dir()) / binaries.PAUSE
    if not pause.is_file():
        raise errors.BinaryNotFoundError(
            f"pause: expected {pause}; run `devcluster build --node real`"
        )
    archive = images.pause_archive(
        binary=pause, name=nodeconfig.PAUSE_IMAGE, out=paths.images_dir / "pause.tar"
    )
    images.import_archive(socket=paths.socket, archive=archive)
    for image in stand_ins:
        images.load(image=image.name, paths=paths, aliases=image.aliases)
    names = ", ".join([nodeconfig.PAUSE_IMAGE, *(each.name for each in stand_ins)])
    out(f"real node: loaded {names}")


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    # Two data dirs starting a real node at once would both find the claim free.
    nodeconfig.CLAIM_FILE.parent.mkdir(parents=True, exist_ok=True)
    with nodeconfig.CLAIM_FILE.with_suffix(".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def start(
    *,
    where: layout.Layout,
    client: api.Api,
    bin_dir: Path | None = None,
    timeout: float = 120.0,
    mode: nodeconfig.Placement = nodeconfig.Placement.SHARED,
    out: Printer = print,
) -> float:
    """Add the real node to the running cluster in ``where``; return the seconds it took.

    A no-op (0) when it already runs, apart from switching it to ``mode`` (taints
    only). The caller holds the data dir's lock.
    """
    paths = nodeconfig.Paths.of(where)
    state = paths.read_state()
    if state is not None and running(where) and health.node_ready(client, nodeconfig.NODE_NAME):
        if state.placement is not mode:
            placement.apply(client, mode, kubelet_port=_kwok_port(where))
            paths.write_state(dataclasses.replace(state, placement=mode))
            out(f"real node {nodeconfig.NODE_NAME}: {placement.describe(mode)}")
        out(f"real node {nodeconfig.NODE_NAME} is already running")
        return 0.0
    preflight()
    with _machine_lock():
        return _start(
            where=where, client=client, bin_dir=bin_dir, timeout=timeout, mode=mode, out=out
        )


def _kwok_port(where: layout.Layout) -> int:
    state = where.read_state()
    return state.ports.kubelet if state else 0


def kubelet_api_reachable(where: layout.Layout) -> bool:
    """Whether this cluster's apiserver was started with the kubelet client certificate
    (a cluster started before it existed reaches no kubelet until ``down`` and ``up``)."""
    state = where.read_state()
    argv = state.commands.get(binaries.APISERVER, []) if state else []
    return any(arg.startswith("--kubelet-client-certificate=") for arg in argv)


def _start(
    *,
    where: layout.Layout,
    client: api.Api,
    bin_dir: Path | None = None,
    timeout: float = 120.0,
    mode: nodeconfig.Placement = nodeconfig.Placement.SHARED,
    out: Printer = print,
) -> float:
    # The body of start(), once preflight passed, under the machine-wide lock.
    _check_claim(where)
    started = time.monotonic()
    kubelet = binaries.resolve(binaries.KUBELET, bin_dir=bin_dir)
    proxy = binaries.resolve(binaries.KUBE_PROXY, bin_dir=bin_dir)
    # The slow part the first time (a Debian base, minutes); not counted in the deadline.
    stand_ins = images.stand_ins()
    out(f"real node: stand-in images built or found ({time.monotonic() - started:.1f}s)")
    deadline = time.monotonic() + timeout
    stop(where=where, out=out)  # whatever is left of a half-started node
    paths = nodeconfig.Paths.of(where)
    chosen = nodeconfig.Ports(
        kubelet=ports.any_free(),
        kubelet_healthz=ports.any_free(),
        proxy_healthz=ports.any_free(),
        proxy_metrics=ports.any_free(),
        registry=ports.any_free(),
    )
    _write_configs(where=where, paths=paths, chosen=chosen, mode=mode)
    kubeconfig = where.components_kubeconfig
    containerd = shutil.which("containerd") or "containerd"
    control_plane = where.read_state()
    if control_plane is None:
        raise errors.StartError(f"no cluster state in {where.data_dir}; start the cluster first")
    state = nodeconfig.State(
        placement=mode,
        ports=chosen,
        commands={
            nodeconfig.CONTAINERD: nodeconfig.containerd_command(
                binary=Path(containerd), paths=paths
            ),
            nodeconfig.KUBELET: nodeconfig.kubelet_command(
                binary=kubelet, paths=paths, kubeconfig=kubeconfig
            ),
            nodeconfig.KUBE_PROXY: nodeconfig.proxy_command(binary=proxy, paths=paths),
            nodeconfig.APISERVER_RELAY: apirelay.command(target_port=control_plane.ports.apiserver),
            nodeconfig.NODE_REGISTRY: nodeconfig.registry_command(
                paths=paths, port=chosen.registry, load_command=_load_command(where)
            ),
        },
    )
    paths.write_state(state)
    _write_claim(where)
    try:
        # Before anything of the node runs: what the host had, and no way in from outside.
        sysctls.record()
        guard.install()
        _ensure_bridge()
        _spawn(where, state, nodeconfig.CONTAINERD)
        _wait(
            where=where,
            deadline=deadline,
            what="containerd to answer",
            predicate=lambda: _containerd_answers(paths),
        )
        out(f"real node: containerd answers ({time.monotonic() - started:.1f}s)")
        _load_images(paths=paths, bin_dir=bin_dir, stand_ins=stand_ins, out=out)
        out(f"real node: images loaded ({time.monotonic() - started:.1f}s)")
        _spawn(where, state, nodeconfig.NODE_REGISTRY)
        registry_v2 = f"http://127.0.0.1:{chosen.registry}/v2/"
        _wait(
            where=where,
            deadline=deadline,
            what="the node registry",
            predicate=lambda: _http_ok(registry_v2),
        )
        _spawn(where, state, nodeconfig.KUBELET)
        _wait(
            where=where,
            deadline=deadline,
            what=f"node {nodeconfig.NODE_NAME} to be Ready",
            predicate=lambda: bool(health.node_ready(client, nodeconfig.NODE_NAME)),
        )
        # A Node object left from an earlier registration keeps its old taints.
        placement.apply(client, mode, kubelet_port=control_plane.ports.kubelet)
        # kube-proxy reads its node's addresses from the Node object, hence only now.
        _spawn(where, state, nodeconfig.KUBE_PROXY)
        healthz = f"http://127.0.0.1:{chosen.proxy_healthz}/healthz"
        _wait(
            where=where,
            deadline=deadline,
            what="kube-proxy /healthz",
            predicate=lambda: _http_ok(healthz),
        )
        # In-cluster clients on this node (an operator's manager pod) dial the
        # `kubernetes` Service; the relay is the endpoint kube-proxy sends them to.
        _spawn(where, state, nodeconfig.APISERVER_RELAY)
        _wait(
            where=where,
            deadline=deadline,
            what=f"the apiserver relay on {nodeconfig.GATEWAY}:{apirelay.PORT}",
            predicate=_relay_answers,
        )
        apirelay.publish(client)
    except BaseException:
        stop(where=where, out=out)
        raise
    elapsed = time.monotonic() - started
    out(f"real node {nodeconfig.NODE_NAME} ready in {elapsed:.1f}s")
    if not kubelet_api_reachable(where):
        out(
            "real node: this cluster's apiserver was started without a kubelet client "
            "certificate, so `kubectl logs/exec/port-forward` cannot reach the node's pods; "
            f"restart the cluster for them (`devcluster --data-dir {where.data_dir} down`, "
            "then `up --node real`)"
        )
    return elapsed


def _load_command(where: layout.Layout) -> str:
    """How a user loads an image into this node (the node registry's hint; IMAGE is
    replaced by the image): the Makefile's target for the checkout's own cluster."""
    checkout = pins.checkout()
    if checkout is not None and where.data_dir == (checkout / ".cluster").resolve():
        return "make cluster-load IMG=IMAGE"
    return f"devcluster --data-dir {where.data_dir} load IMAGE"


def _spawn(where: layout.Layout, state: nodeconfig.State, name: str) -> None:
    processes.spawn(
        argv=state.commands[name], log_file=where.log_file(name), pid_file=where.pid_file(name)
    )


def _restore_sysctls(out: Printer) -> None:
    for each in sysctls.restore():
        if each.error:
            out(f"real node: could not put sysctl {each.name} back to {each.value}: {each.error}")
        else:
            out(f"real node: put sysctl {each.name} back to {each.value} (was {each.found})")


def stop(*, where: layout.Layout, client: api.Api | None = None, out: Printer = print) -> None:
    """Stop this data dir's real node and remove what it made; a no-op without one.

    With ``client``, the Node object is deleted too (``down --node real`` on a cluster
    that keeps running); a cluster that stops altogether does not need that.
    """
    paths = nodeconfig.Paths.of(where)
    if not paths.directory.exists():
        return
    state = paths.read_state()
    for name in reversed(nodeconfig.ORDER):
        handle = processes.read(where.pid_file(name))
        if handle is not None:
            graceful = processes.stop(handle, timeout=10.0)
            out(f"stopped {name} (pid {handle.pid}{'' if graceful else ', killed'})")
        where.pid_file(name).unlink(missing_ok=True)
    namespaces = leftovers.container_netns(paths)
    killed = leftovers.kill_containers(paths)
    if killed:
        out(f"real node: killed {killed} container processes")
    leftovers.unmount_all(paths.directory)
    leftovers.unmount_netns(namespaces)
    leftovers.remove_cgroups()
    if state is not None and nodeconfig.KUBE_PROXY in state.commands:
        # Removes the KUBE-* chains kube-proxy wrote into the host's iptables.
        proxy = state.commands[nodeconfig.KUBE_PROXY][0]
        if Path(proxy).is_file():
            _try([proxy, "--cleanup", f"--config={paths.proxy_config}"])
    if state is not None:
        leftovers.remove_kubelet_chains()
    if _claim_owner() == where.data_dir:
        _try(["ip", "link", "del", nodeconfig.BRIDGE])
        guard.remove()
        _restore_sysctls(out)
        nodeconfig.CLAIM_FILE.unlink(missing_ok=True)
    if client is not None:
        apirelay.withdraw(client)
        placement.release(client, kubelet_port=_kwok_port(where))
        try:
            client.call("DELETE", f"/api/v1/nodes/{nodeconfig.NODE_NAME}")
        except errors.ApiError as exc:
            if exc.status != 404:
                raise
    still_mounted = leftovers.mounts_under(paths.directory)
    if still_mounted:
        # rmtree would descend into them and delete what they show (a hostPath, say).
        out(f"real node: left {paths.directory} in place; still mounted: {still_mounted}")
        return
    shutil.rmtree(paths.directory, ignore_errors=True)
