"""The real node's facts and configuration files: names, paths, ports, and what
containerd, the CNI bridge, kubelet and kube-proxy are told.

``devcluster up --node real`` adds one real node beside kwok's fake one (see
:mod:`devcluster.node` for starting and stopping it). This module only decides and
renders; it starts nothing, so ``health`` can read it without pulling in the lifecycle.

Where pods go depends on the node's :class:`Placement`. ``SHARED`` (the default): the
node carries the label ``devcluster.io/node=real`` and the taint
``devcluster.io/node=real:NoSchedule``, so only pods that both tolerate the taint and
select the label run there; every other pod keeps landing on kwok's fake node.
``ONLY`` (``up --node real --kwok off``): the node has no taint and kwok's node is
removed, so every pod, an unchanged role's Deployment included, runs in a real
container on this node (see :mod:`devcluster.placement`).

Network, all on this machine: pods get addresses from :data:`POD_SUBNET` on the bridge
:data:`BRIDGE` (Debian's bridge and host-local CNI plugins, no masquerade, no host
ports), each in a network namespace containerd creates; Services keep the control
plane's ClusterIP range, served by kube-proxy's iptables rules. Every port a node
component listens on is on 127.0.0.1; NodePorts answer on the bridge address only.
"""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from devcluster import certs, components, layout

NODE_NAME = "real-node-0"
#: The label and taint that steer pods to the real node (and keep the others off it).
LABEL_KEY = "devcluster.io/node"
LABEL_VALUE = "real"
TAINT_EFFECT = "NoSchedule"

CONTAINERD = "containerd"
KUBELET = "kubelet"
KUBE_PROXY = "kube-proxy"
#: The relay that lets pods reach the loopback-only apiserver (see ``apirelay``).
APISERVER_RELAY = "apiserver-relay"
#: containerd's mirror for every registry: the node's own images, or a hint (``registry``).
NODE_REGISTRY = "node-registry"
#: Start order; stopped in reverse.
ORDER = (CONTAINERD, NODE_REGISTRY, KUBELET, KUBE_PROXY, APISERVER_RELAY)

#: One real node per machine: kube-proxy owns the host's KUBE-* iptables chains and the
#: bridge name and subnet are fixed, so a second one would fight the first.
BRIDGE = "devcluster0"
POD_SUBNET = "10.245.0.0/24"
GATEWAY = "10.245.0.1"
CNI_NETWORK = "devcluster"
#: Where Debian's containernetworking-plugins installs the plugins.
CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
#: The sandbox image containerd runs for every pod (built here: see ``images``).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
#: Which data dir owns this machine's real node (see :data:`BRIDGE`).
CLAIM_FILE = Path("/run/devcluster/real-node")
#: The kubelet's API server (logs, exec, attach, port-forward) as the apiserver dials
#: it: at the node's InternalIP, the bridge's own address, which only this machine
#: reaches (the guard drops it from anywhere else).
KUBELET_SERVER = certs.Server(node=NODE_NAME, ips=(GATEWAY, "127.0.0.1"))


class Placement(enum.Enum):
    """Which pods the real node takes."""

    #: Only pods with its selector and toleration; kwok's node takes the rest.
    SHARED = "shared"
    #: Every pod: kwok's node is removed (``--kwok off``).
    ONLY = "only"


def real_taint() -> dict[str, str]:
    return {"key": LABEL_KEY, "value": LABEL_VALUE, "effect": TAINT_EFFECT}


def toleration() -> dict[str, str]:
    """What a pod needs to be allowed on the real node."""
    return {"key": LABEL_KEY, "operator": "Equal", "value": LABEL_VALUE, "effect": TAINT_EFFECT}


def node_selector() -> dict[str, str]:
    """What a pod needs to be sent to the real node (and nowhere else)."""
    return {LABEL_KEY: LABEL_VALUE}


@dataclass(frozen=True)
class Ports:
    """Loopback ports of the node's servers, chosen by the kernel at ``up``."""

    kubelet: int
    kubelet_healthz: int
    proxy_healthz: int
    proxy_metrics: int
    #: The node registry's (0 in the state of a node started before it existed).
    registry: int = 0


@dataclass(frozen=True)
class State:
    """What a running real node needs to be found and stopped by another process."""

    ports: Ports
    commands: dict[str, list[str]] = field(default_factory=dict)
    placement: Placement = Placement.SHARED


@dataclass(frozen=True)
class Paths:
    """Where the real node keeps its files: ``<data dir>/node/``."""

    directory: Path

    @classmethod
    def of(cls, where: layout.Layout) -> Paths:
        return cls(where.data_dir / "node")

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    @property
    def containerd_config(self) -> Path:
        return self.directory / "containerd" / "config.toml"

    @property
    def containerd_root(self) -> Path:
        return self.directory / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.directory / "containerd" / "state"

    @property
    def socket(self) -> Path:
        return self.directory / "containerd" / "containerd.sock"

    @property
    def cni_conf_dir(self) -> Path:
        return self.directory / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.directory / "cni" / "ipam"

    @property
    def netns_dir(self) -> Path:
        """Where the CRI plugin mounts pods' network namespaces (its state dir's ``netns``)."""
        return self.containerd_state / "io.containerd.grpc.v1.cri" / "netns"

    @property
    def kubelet_root(self) -> Path:
        return self.directory / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.directory / "kubelet.yaml"

    @property
    def pod_logs(self) -> Path:
        return self.directory / "pod-logs"

    @property
    def proxy_config(self) -> Path:
        return self.directory / "kube-proxy.yaml"

    @property
    def content_store(self) -> Path:
        """containerd's blobs, which the node registry serves."""
        return self.containerd_root / "io.containerd.content.v1.content"

    @property
    def images_dir(self) -> Path:
        return self.directory / "images"

    def read_state(self) -> State | None:
        try:
            raw = json.loads(self.state_file.read_text())
            return State(
                ports=Ports(**raw["ports"]),
                commands={str(k): [str(a) for a in v] for k, v in raw["commands"].items()},
                placement=Placement(raw.get("placement", Placement.SHARED.value)),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write_state(self, state: State) -> None:
        raw = asdict(state) | {"placement": state.placement.value}
        self.state_file.write_text(json.dumps(raw, indent=2) + "\n")


def _toml(value: str | bool | int) -> str:
    # json's string escaping is valid TOML for basic strings; booleans are lower case.
    return json.dumps(value)


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(_toml(v) for v in values) + "]"


def containerd_config(paths: Paths, *, registry_port: int) -> str:
    """containerd 1.6 (Debian's) with the CRI plugin: runc, overlayfs, our CNI network.

    ``restrict_oom_score_adj``: hosts like this one refuse lowering oom_score_adj, and
    runc fails every sandbox with "can't get final child's PID from pipe" unless the
    CRI plugin keeps scores at or above containerd's own. The CRI streaming server
    (exec, attach, port-forward) binds loopback; no metrics or debug listener is set.
    Every pull goes first to the node registry on ``registry_port`` (the mirror for
    ``*``): the node's own image, or an error naming the command that loads it.
    """
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join(
        [
            "version = 2",
            f"root = {_toml(str(paths.containerd_root))}",
            f"state = {_toml(str(paths.containerd_state))}",
            # No snapshotter this host cannot use, so none fails noisily at start.
            'disabled_plugins = ["io.containerd.snapshotter.v1.aufs",'
            ' "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",'
            ' "io.containerd.snapshotter.v1.devmapper"]',
            "",
            "[grpc]",
            f"  address = {_toml(str(paths.socket))}",
            "",
            f"[{cri}]",
            f"  sandbox_image = {_toml(PAUSE_IMAGE)}",
            f"  restrict_oom_score_adj = {_toml(True)}",
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
            # Pods' network namespaces under the state dir (paths.netns_dir), not
            # /run/netns: inside node/, where `down` unmounts everything.
            f"  netns_mounts_under_state_dir = {_toml(True)}",
            "",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            "",
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            "",
            # The pre-1.7 mirror syntax: Debian's containerd 1.6 has no `_default` hosts dir.
            f'[{cri}.registry.mirrors."*"]',
            f"  endpoint = {_toml_list([f'http://127.0.0.1:{registry_port}'])}",
            "",
            f"[{cri}.cni]",
            f"  bin_dir = {_toml(str(CNI_BIN_DIR))}",
            f"  conf_dir = {_toml(str(paths.cni_conf_dir))}",
            "  max_conf_num = 1",
            "",
        ]
    )


def cni_network(paths: Paths) -> dict[str, Any]:
    """The bridge network every pod joins (containerd adds loopback itself)."""
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                # No masquerade (pods reach nothing beyond the machine, and a failed
                # DEL would leave NAT rules behind) and no portmap plugin (no hostPort).
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET, "gateway": GATEWAY}]],
                    # Pods reach ClusterIPs (the `kubernetes` Service, for in-cluster
                    # clients) through the gateway, where kube-proxy's rules are; no
                    # default route, so nothing beyond the machine.
                    "routes": [{"dst": components.SERVICE_CIDR, "gw": GATEWAY}],
                    # Inside the data dir, so `down` forgets every lease with it.
                    "dataDir": str(paths.cni_ipam_dir),
                },
            }
        ],
    }


def kubelet_config(
    *, paths: Paths, ports: Ports, pki: certs.Pki, placement: Placement = Placement.SHARED
) -> dict[str, Any]:
    """KubeletConfiguration for this host: cgroupfs, no QoS cgroups, servers on this
    machine only.

    cgroup v1 needs ``failCgroupV1: false`` (1.35+ refuses it otherwise); without a
    systemd init, ``cgroupfs``; ``cgroupsPerQOS: false`` (with no node-allocatable
    enforcement, which needs it) keeps the kubelet from managing a cgroup tree shared
    with the host. Scores stay where they are (this host refuses lowering them).

    The kubelet API listens on the bridge's address, the node's InternalIP, where the
    apiserver dials it for logs, exec, attach and port-forward; it serves a certificate
    from the cluster CA and accepts clients of that CA (the apiserver's kubelet client
    certificate), each request authorized by the apiserver.
    """
    taints = [real_taint()] if placement is Placement.SHARED else []
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": GATEWAY,
        "port": ports.kubelet,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports.kubelet_healthz,
        "tlsCertFile": str(pki.node_serving_cert),
        "tlsPrivateKeyFile": str(pki.node_serving_key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki.ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": False,
        "enforceNodeAllocatable": ["none"],
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "podLogsDir": str(paths.pod_logs),
        "volumePluginDir": str(paths.directory / "volume-plugins"),
        "registerWithTaints": taints,
        "clusterDomain": "cluster.local",
        # A shared development machine: evict only when really short, and never
        # garbage-collect the images loaded here (they cannot be pulled again).
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }


def proxy_config(*, kubeconfig: Path, ports: Ports) -> dict[str, Any]:
    """KubeProxyConfiguration: iptables mode, loopback servers, sysctls left alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": POD_SUBNET,
        "detectLocalMode": "ClusterCIDR",
        "healthzBindAddress": f"127.0.0.1:{ports.proxy_healthz}",
        "metricsBindAddress": f"127.0.0.1:{ports.proxy_metrics}",
        # NodePorts only on the bridge's own address: nothing beyond the machine.
        "nodePortAddresses": [f"{GATEWAY}/32"],
        "iptables": {"localhostNodePorts": False},
        "oomScoreAdj": 0,
        # 0: leave the host's conntrack sysctls as they are (a VM may refuse them).
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def containerd_command(*, binary: Path, paths: Paths) -> list[str]:
    return [str(binary), f"--config={paths.containerd_config}"]


def kubelet_command(*, binary: Path, paths: Paths, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--config={paths.kubelet_config}",
        # The control plane's admin credentials, as the other components use: the
        # apiserver authorizes with RBAC only (no Node authorizer to bind a node to).
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={paths.kubelet_root}",
        f"--cert-dir={paths.kubelet_root / 'pki'}",
        f"--hostname-override={NODE_NAME}",
        # The kubelet refuses a loopback node IP; the bridge's address is this host's own.
        f"--node-ip={GATEWAY}",
        f"--node-labels={LABEL_KEY}={LABEL_VALUE}",
    ]


def proxy_command(*, binary: Path, paths: Paths) -> list[str]:
    return [str(binary), f"--config={paths.proxy_config}"]


def registry_command(*, paths: Paths, port: int, load_command: str) -> list[str]:
    """The node registry (``devcluster.registry``): this interpreter, on loopback."""
    return [
        sys.executable,
        "-m",
        "devcluster.registry",
        f"--port={port}",
        f"--socket={paths.socket}",
        f"--content={paths.content_store}",
        f"--load-command={load_command}",
    ]
