"""The embedded cluster the benchmarks run on, seen from its API: connecting (started if
need be), an admin client that rides out API server restarts, namespaces, room for many
Services, and how many pods the nodes can still take.

Every benchmark starts here (``embedded.connect()``), then installs a workload
(``bench/workloads.py``) and waits for it to converge (``bench/convergence.py``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any, cast

import devcluster
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK

CRD_GVK = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
NAMESPACE = GVK("", "v1", "Namespace")
CONFIGMAP = GVK("", "v1", "ConfigMap")


def connect() -> tuple[devcluster.Cluster, kube_client.Client]:
    """The embedded cluster (started if it is not running) and an admin client."""
    cluster = devcluster.Cluster()
    if not (cluster.kubeconfig.is_file() and cluster.is_running()):
        devcluster.build(skip_overridden=True)
        cluster.start()
    return cluster, kube_client.Client(kube_config.from_kubeconfig(str(cluster.kubeconfig)))


class Patient:
    """The admin client, riding out an API server that restarts (tests sharing the
    cluster restart it) for up to ``seconds``: long benchmarks are not lost to it. A
    create that reached the server before the connection broke counts as done."""

    def __init__(self, client: kube_client.Client, *, seconds: float = 300.0) -> None:
        self._client = client
        self._seconds = seconds

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + self._seconds
            retried = False
            while True:
                try:
                    return attribute(*args, **kwargs)
                except kube_errors.ConflictError:
                    if retried and name == "create":
                        return None
                    raise
                except kube_errors.ApiError as exc:
                    away = exc.status >= 500 or exc.status == 429  # 429: storage (re)initializing
                    if not away or time.monotonic() > deadline:
                        raise
                except kube_errors.TransportError:
                    if time.monotonic() > deadline:
                        raise
                retried = True
                time.sleep(2)

        return call


def patient(client: kube_client.Client) -> kube_client.Client:
    """``client``, retrying while the API server is away (:class:`Patient`)."""
    return cast(kube_client.Client, Patient(client))


SERVICE_CIDR = GVK("networking.k8s.io", "v1", "ServiceCIDR")
#: The embedded cluster's Service range is a /24 (254 Services); a benchmark of
#: hundreds of Memcacheds (a Service each) adds this one while it runs.
BENCH_SERVICE_CIDR = "10.96.0.0/16"


def _room(client: kube_client.Client, body: dict[str, Any]) -> bool:
    """Create the benchmarks' ServiceCIDR; False if one is there already. One that an
    earlier benchmark deleted allocates nothing while its Services go: wait it out."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            client.create(SERVICE_CIDR, body)
            return True
        except kube_errors.ConflictError:
            try:
                existing = client.get(SERVICE_CIDR, name=body["metadata"]["name"])
            except kube_errors.NotFoundError:
                continue  # gone meanwhile: create it
            if not existing["metadata"].get("deletionTimestamp"):
                return False  # another benchmark's, or one left behind: the room is there
        time.sleep(2)  # waiting for the terminating one to go
    raise TimeoutError("ServiceCIDR bench-services still terminating after 600 s")


@contextlib.contextmanager
def service_room(client: kube_client.Client) -> Iterator[None]:
    """A ServiceCIDR (``BENCH_SERVICE_CIDR``) while the benchmark runs, for its Services."""
    body = {"metadata": {"name": "bench-services"}, "spec": {"cidrs": [BENCH_SERVICE_CIDR]}}
    created = _room(client, body)
    try:
        yield
    finally:
        if created:
            with contextlib.suppress(kube_errors.KubeError):
                client.delete(SERVICE_CIDR, name="bench-services")


def create_namespace(client: kube_client.Client, name: str) -> str:
    client.create(NAMESPACE, {"metadata": {"name": name}})
    return name


def delete_namespaces(client: kube_client.Client, names: Iterable[str]) -> None:
    for name in names:
        with contextlib.suppress(kube_errors.KubeError):
            client.delete(NAMESPACE, name=name)


def free_pod_slots(client: kube_client.Client) -> int:
    """Pods the cluster's nodes can still take (allocatable minus non-terminated pods)."""
    nodes = client.list(GVK("", "v1", "Node")).get("items", [])
    room = sum(count(n["status"].get("allocatable", {}).get("pods", "0")) for n in nodes)
    pods = client.list(GVK("", "v1", "Pod")).get("items", [])
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    return room - len(live)


#: Kubernetes quantity suffixes a count may carry (a kwok node's pods: "1M").
_SUFFIXES = {"k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def count(quantity: object) -> int:
    """A whole-number Kubernetes quantity ("110", "1M", "2Ki") as an int."""
    text = str(quantity)
    for suffix, factor in sorted(_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if text.endswith(suffix):
            return int(text.removesuffix(suffix)) * factor
    return int(text)
