"""An embedded local Kubernetes control plane for development and tests, without Docker.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (which fakes
a kubelet, so pods reach Running on a fake node) are built from Go modules
(:mod:`~devcluster.builder`) and run as detached processes on loopback
(:class:`~devcluster.cluster.Cluster`). Opt-in, a real node (containerd, kubelet,
kube-proxy; :mod:`~devcluster.node`) runs real containers beside the fake one. It is
independent of the ``runner`` package on purpose: it is the ground the runner is tested
on.

Typical use::

    from devcluster import Cluster, accounts
    cluster = Cluster()                 # data dir .cluster/ (kubeconfig: .cluster/kubeconfig)
    cluster.start()                     # no-op when already running
    cluster.kubectl("get", "nodes")
    accounts.write_kubeconfig(cluster, namespace="ns", name="sa")
    cluster.restart_apiserver()
    cluster.stop()
"""

from devcluster import accounts
from devcluster.binaries import resolve
from devcluster.builder import build
from devcluster.cluster import Cluster, default_data_dir
from devcluster.errors import (
    ApiError,
    BinaryNotFoundError,
    BuildError,
    DevClusterError,
    KubectlError,
    NodeUnavailableError,
    StartError,
)

__all__ = [
    "ApiError",
    "BinaryNotFoundError",
    "BuildError",
    "Cluster",
    "DevClusterError",
    "KubectlError",
    "NodeUnavailableError",
    "StartError",
    "accounts",
    "build",
    "default_data_dir",
    "resolve",
]
