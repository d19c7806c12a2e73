"""The command line of each control-plane component, and the fake node kwok runs.

Flags follow envtest (``controlplane/apiserver.go``) and kwokctl's binary runtime
(``pkg/kwokctl/components/*.go``), trimmed to one loopback-only cluster:
etcd → kube-apiserver → kube-controller-manager + kube-scheduler + kwok. kwok plays
kubelet for nodes annotated ``kwok.x-k8s.io/node=fake``: it marks them Ready, heartbeats
their leases, and moves pods bound to them to Running/Ready (pods never really run).
It also serves the kubelet API on loopback, so ``exec``, ``attach`` and ``logs`` reach
simulated pods: exec runs the command on this machine, logs and attach read one
simulated container log (see :func:`kwok_debugging`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devcluster import binaries, certs, layout

NODE_NAME = "kwok-node-0"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
#: What every simulated container has logged (kwok serves it for logs and attach).
SIMULATED_LOG_LINE = "simulated container log line from kwok"
#: kwok's kubelet server, as the apiserver dials it (the fake node's InternalIP).
KWOK_SERVER = certs.Server(node=NODE_NAME, ips=("127.0.0.1",))


def etcd(*, binary: Path, where: layout.Layout, ports: layout.Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binary),
        "--name=devcluster",
        f"--data-dir={where.etcd_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=devcluster={peer}",
        # A throwaway cluster gains nothing from fsync and loses a lot of speed to it.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver(*, binary: Path, where: layout.Layout, ports: layout.Ports) -> list[str]:
    pki = where.pki
    return [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--cert-dir={pki.directory}",
        f"--tls-cert-file={pki.server_cert}",
        f"--tls-private-key-file={pki.server_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={where.tokens_file}",
        f"--requestheader-client-ca-file={pki.ca_cert}",
        f"--requestheader-allowed-names={certs.FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki.proxy_cert}",
        f"--proxy-client-key-file={pki.proxy_key}",
        # Admission webhooks get a client certificate (certs.Pki.webhook_client_ca signs
        # it): a webhook server that requires one answers the API server only.
        f"--admission-control-config-file={pki.admission_config}",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={SA_ISSUER}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        # The advertise address is loopback, which Endpoints validation rejects, so the
        # apiserver publishes no endpoints for the `kubernetes` Service. With the real
        # node, devcluster publishes its relay there (apirelay), which this keeps intact.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        # On SIGTERM, end open watches instead of letting them hold the HTTP server's
        # shutdown for its 60 s timeout: restarts (tests of clients riding out an
        # apiserver restart) then take seconds, and clients see a clean end of stream.
        "--shutdown-watch-termination-grace-period=2s",
        # exec/attach/logs go to the kubelet server at the node's InternalIP: kwok's on
        # 127.0.0.1, the real node's on the bridge; the nodes' Hostnames do not resolve.
        "--kubelet-preferred-address-types=InternalIP",
        # Both kubelet servers present certificates from the cluster CA, verified here,
        # and accept this client certificate (certs.ensure_kubelet_certs).
        f"--kubelet-certificate-authority={pki.ca_cert}",
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
    ]


def controller_manager(*, binary: Path, where: layout.Layout, ports: layout.Ports) -> list[str]:
    kubeconfig = where.components_kubeconfig
    pki = where.pki
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        f"--cert-dir={where.cert_dir('kube-controller-manager')}",
        # Publishes kube-root-ca.crt into namespaces and signs CSRs, as in a real cluster.
        f"--root-ca-file={pki.ca_cert}",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--cluster-signing-cert-file={pki.ca_cert}",
        f"--cluster-signing-key-file={pki.ca_key}",
        # Default client limits (20 qps) make Deployment tests crawl; this is a dev box.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]


def scheduler(*, binary: Path, where: layout.Layout, ports: layout.Ports) -> list[str]:
    kubeconfig = where.components_kubeconfig
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        f"--cert-dir={where.cert_dir('kube-scheduler')}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]


def kwok(*, binary: Path, where: layout.Layout, stages: Path, ports: layout.Ports) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={where.components_kubeconfig}",
        f"--config={stages}",
        f"--config={where.kwok_dir / 'debugging.yaml'}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
        f"--cidr={POD_CIDR}",
        # The kubelet API (exec, attach, logs), on loopback, with a serving certificate
        # from the cluster CA: the apiserver verifies kubelets' certificates
        # (--kubelet-certificate-authority), kwok's as the real node's.
        "--node-ip=127.0.0.1",
        f"--node-port={ports.kubelet}",
        f"--server-address=127.0.0.1:{ports.kubelet}",
        f"--tls-cert-file={where.pki.kwok_serving_cert}",
        f"--tls-private-key-file={where.pki.kwok_serving_key}",
        "--node-lease-duration-seconds=40",
    ]


def kwok_debugging(where: layout.Layout) -> str:
    """kwok's configuration for exec, attach and logs of every simulated pod.

    Exec runs the command on this machine (as the user running the cluster, in
    ``kwok/exec``): a dev cluster on loopback, whose pods are simulated anyway. Logs
    and attach read one container log holding :data:`SIMULATED_LOG_LINE`.
    """
    log_file = str(where.kwok_dir / "container.log")
    documents: list[dict[str, Any]] = [
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterExec",
            "metadata": {"name": "devcluster-exec"},
            "spec": {"execs": [{"local": {"workDir": str(where.kwok_dir / "exec")}}]},
        },
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "devcluster-logs"},
            "spec": {"logs": [{"logsFile": log_file, "previousLogsFile": log_file}]},
        },
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterAttach",
            "metadata": {"name": "devcluster-attach"},
            "spec": {"attaches": [{"logsFile": log_file}]},
        },
    ]
    # JSON is YAML; one document per object, as kwok's config loader expects.
    return "---\n".join(json.dumps(doc, indent=2) + "\n" for doc in documents)


def simulated_log() -> str:
    """The simulated container log, in the CRI format kubelets store logs in."""
    return f"2026-01-01T00:00:00.000000000Z stdout F {SIMULATED_LOG_LINE}\n"


#: Start order, and the port each component's health is checked on (None: no server).
ORDER = (
    binaries.ETCD,
    binaries.APISERVER,
    binaries.CONTROLLER_MANAGER,
    binaries.SCHEDULER,
    binaries.KWOK,
)


def port_of(component: str, ports: layout.Ports) -> int | None:
    return {
        binaries.ETCD: ports.etcd_client,
        binaries.APISERVER: ports.apiserver,
        binaries.CONTROLLER_MANAGER: ports.controller_manager,
        binaries.SCHEDULER: ports.scheduler,
    }.get(component)


def fake_node(name: str = NODE_NAME, *, kubelet_port: int = 0) -> dict[str, Any]:
    """A node kwok will manage: no taints, so ordinary pods schedule onto it.

    Its address and kubelet port are where the apiserver sends exec, attach and logs.
    """
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "spec": {},
        # Node is one of the few kinds whose status may be set on create.
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
                "operatingSystem": "linux",
            },
            "phase": "Running",
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            **(
                {"daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}}
                if kubelet_port
                else {}
            ),
        },
    }
