"""What the benchmarks share: the cluster, the two workloads, convergence, process accounting.

Used by ``bench/reconcile.py`` (``make bench``) and ``bench/compare.py``
(``make bench-compare``). Workloads:

- ``one-task``: a ``Bench`` kind whose role is one ``kubernetes.core.k8s`` task
  (``bench/roles/bench``);
- ``memcached``: this repository's ``roles/memcached`` with the CRD from
  ``config/crd/bases``, both copied under a private API group
  (``cache.bench.example.com``) so that tests installing or deleting the real
  CRD at the same time cannot delete the benchmark's objects. The role is the
  same text apart from that group.

Process accounting reads ``/proc`` only (no cgroups): the CPU time of a
process tree is, for every live process in it, its own ``utime + stime`` plus
``cutime + cstime`` — the time of the children it has reaped (and, through
them, of their reaped children). Every process a runtime starts is reaped
inside the tree (warm launchers reap the runs they fork; they are the
runtime's children), so deltas of this sum between two quiet moments are the
CPU seconds the runtime spent, Ansible included.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, cast

import yaml

import devcluster
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.types import GVK

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CRD_GVK = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
NAMESPACE = GVK("", "v1", "Namespace")
CONFIGMAP = GVK("", "v1", "ConfigMap")
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
BENCH_GROUP = "bench.playbook-operator.dev"
MEMCACHED_GROUP = "cache.bench.example.com"


# -- the cluster ------------------------------------------------------------


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


# -- workloads ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A CR kind, its CRD and the role that reconciles it."""

    label: str
    gvk: GVK
    crd: dict[str, Any]
    roles_dir: Path  # holds the role; roles_path of a plain ansible-playbook run
    role: str
    spec: dict[str, Any]
    #: extra vars besides the object's own, for a plain ansible-playbook run
    var_prefix: str
    #: when the role's own work for an object is done, if it says so in status
    #: (the role may ask to run again until then): pods running, for memcached
    ready: Callable[[dict[str, Any]], bool] | None = None

    @property
    def role_path(self) -> Path:
        return self.roles_dir / self.role

    def watches(self) -> str:
        return (
            f"- version: {self.gvk.version}\n  group: {self.gvk.group}\n"
            f"  kind: {self.gvk.kind}\n  role: {self.role_path}\n"
        )

    def obj(self, name: str, namespace: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": self.gvk.api_version,
            "kind": self.gvk.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**self.spec, **spec},
        }

    def extra_vars(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What a runtime passes the role for ``obj`` (spec keys are already snake_case)."""
        meta = obj["metadata"]
        return {
            "ansible_operator_meta": {"name": meta["name"], "namespace": meta["namespace"]},
            **obj["spec"],
            self.var_prefix: obj,
            f"{self.var_prefix}_spec": obj["spec"],
        }

    def install(self, client: kube_client.Client) -> None:
        """Create the CRD (if missing) and wait until its kind is served."""
        with contextlib.suppress(kube_errors.ConflictError):
            client.create(CRD_GVK, self.crd)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.forget_discovery()
                client.resource(self.gvk)
                return
            except kube_errors.KubeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def open_crd(gvk: GVK, *, plural: str) -> dict[str, Any]:
    """A namespaced CRD of ``gvk``: one version, a status subresource, every field kept."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{gvk.group}"},
        "spec": {
            "group": gvk.group,
            "names": {"kind": gvk.kind, "listKind": f"{gvk.kind}List", "plural": plural}
            | {"singular": gvk.kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": gvk.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def one_task() -> Workload:
    """The ``Bench`` kind and its one-task role (``bench/roles/bench``)."""
    gvk = GVK(BENCH_GROUP, "v1", "Bench")
    crd = open_crd(gvk, plural="benches")
    return Workload(
        label="one-task",
        gvk=gvk,
        crd=crd,
        roles_dir=HERE / "roles",
        role="bench",
        spec={"value": 0},
        var_prefix="_bench_playbook_operator_dev_bench",
    )


def memcached(workdir: Path, *, collection: str = "playbook_operator.util") -> Workload:
    """``roles/memcached`` and its CRD, copied into ``workdir`` under a private group.

    ``collection`` replaces the role's ``playbook_operator.util`` (``operator_sdk.util``
    for a role that runs on both runtimes, as one written for ansible-operator has it).
    """
    source = yaml.safe_load(
        (ROOT / "config" / "crd" / "bases" / "cache.example.com_memcacheds.yaml").read_text()
    )
    old_prefix = "_cache_example_com_memcached"
    new_prefix = "_" + MEMCACHED_GROUP.replace(".", "_") + "_memcached"
    crd = copy.deepcopy(source)
    crd["spec"]["group"] = MEMCACHED_GROUP
    crd["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{MEMCACHED_GROUP}"}
    roles_dir = workdir / "roles"
    target = roles_dir / "memcached"
    shutil.copytree(ROOT / "roles" / "memcached", target)
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
            text = path.read_text()
            text = text.replace("cache.example.com/", f"{MEMCACHED_GROUP}/")
            text = text.replace(old_prefix, new_prefix)
            text = text.replace("playbook_operator.util.", f"{collection}.")
            path.write_text(text)
    version = crd["spec"]["versions"][0]["name"]
    return Workload(
        label="memcached",
        gvk=GVK(MEMCACHED_GROUP, version, crd["spec"]["names"]["kind"]),
        crd=crd,
        roles_dir=roles_dir,
        role="memcached",
        spec={"size": 1},
        var_prefix=new_prefix,
        ready=pods_reported,
    )


def pods_reported(obj: dict[str, Any]) -> bool:
    """The memcached role reported in status that its pods run, at this generation."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    size = int((obj.get("spec") or {}).get("size", 1))
    ready = status.get("readyReplicas", len(status.get("nodes") or []))
    return status.get("observedGeneration") == meta.get("generation") and str(ready) == str(size)


# -- convergence --------------------------------------------------------------


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = obj.get("status") or {}
    return {c.get("type", ""): c for c in status.get("conditions") or []}


def successful(obj: dict[str, Any]) -> bool:
    return conditions(obj).get("Successful", {}).get("status") == "True"


def at_generation(obj: dict[str, Any]) -> bool:
    """Successful at the object's current generation (runtimes that record it)."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    return successful(obj) and status.get("observedGeneration") == meta.get("generation")


class Converged:
    """Watches one kind in one namespace; records when each object first meets ``done``."""

    def __init__(
        self,
        client: kube_client.Client,
        gvk: GVK,
        namespace: str,
        *,
        done: Callable[[dict[str, Any]], bool] = at_generation,
    ) -> None:
        self.times: dict[tuple[str, int], float] = {}
        self._cond = threading.Condition()
        self._client = client
        self._gvk = gvk
        self._namespace = namespace
        self._done = done
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        path = self._client.resource(self._gvk).path(namespace=self._namespace)
        while True:
            try:
                for event in self._client.stream(path, query={}, read_timeout=600):
                    if isinstance(event, decode.Rejected):
                        continue  # not an object this benchmark made
                    obj = event["object"]
                    if not self._done(obj):
                        continue
                    key = (obj["metadata"]["name"], int(obj["metadata"].get("generation", 1)))
                    with self._cond:
                        self.times.setdefault(key, time.monotonic())
                        self._cond.notify_all()
            except kube_errors.KubeError:
                time.sleep(0.2)

    def wait(self, names: Sequence[str], *, generation: int = 1, timeout: float = 900) -> float:
        """The time the last of ``names`` converged at ``generation`` (or later)."""
        deadline = time.monotonic() + timeout

        def when(name: str) -> float | None:
            found = [t for (n, g), t in self.times.items() if n == name and g >= generation]
            return min(found) if found else None

        with self._cond:
            while True:
                seen = {name: when(name) for name in names}
                missing = [name for name, at in seen.items() if at is None]
                if not missing:
                    return max(at for at in seen.values() if at is not None)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not converged within {timeout:g}s: {missing[:5]}")
                self._cond.wait(min(left, 1.0))


def settle(count: Callable[[], float], *, quiet: float = 3.0, timeout: float = 300) -> float:
    """Wait until ``count()`` (runs so far) has not changed for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    return last


# -- processes ----------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (index 0 is field 3, state)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields is not None else None


def cpu_split(pid: int) -> tuple[float, float]:
    """(utime + stime, cutime + cstime) of one process, in seconds."""
    fields = _stat(pid)
    if fields is None:
        return 0.0, 0.0
    own = int(fields[11]) + int(fields[12])
    reaped = int(fields[13]) + int(fields[14])
    return own / _CLK_TCK, reaped / _CLK_TCK


def cpu_seconds(root: int) -> float:
    """utime + stime + cutime + cstime over the live tree under ``root``."""
    ticks = 0
    for pid in descendants(root):
        fields = _stat(pid)
        if fields is not None:
            ticks += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return ticks / _CLK_TCK


def machine_ticks() -> tuple[int, int]:
    """(all, idle) CPU ticks of the whole machine so far, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return sum(values), values[3] + values[4]  # idle + iowait


def machine_busy(since: tuple[int, int]) -> float:
    """Fraction of the machine's CPU time that was busy since ``since`` (all processes)."""
    total, idle = machine_ticks()
    return 1 - (idle - since[1]) / max(total - since[0], 1)


def rss_bytes(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    return total


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Sampling:
    """Calls ``sample()`` every ``interval`` seconds in a thread, from ``with`` to its end.

    The one sampling loop of the benchmarks: :class:`PeakSampler` keeps a maximum, the
    soak's ``Sampler`` (``bench/scale_soak.py``) a series. ``sample()`` handles its own
    errors: what one sample cannot read is the subclass's to skip or report.
    """

    def __init__(self, *, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


class PeakSampler(Sampling):
    """Samples ``measure()`` every ``interval`` seconds in a thread; keeps the maximum."""

    def __init__(self, measure: Callable[[], float], *, interval: float = 0.25) -> None:
        super().__init__(interval=interval)
        self.peak = 0.0
        self._measure = measure

    def sample(self) -> None:
        with contextlib.suppress(Exception):
            self.peak = max(self.peak, self._measure())


# -- figures ------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float], unit: str = "s") -> str:
    """``median (min-max)``, e.g. ``1.42 s (1.37-1.51)``."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f} {unit}"
    return f"{median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


def ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator or math.isnan(denominator):
        return "-"
    return f"{numerator / denominator:.2f}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def dump(path: Path | None, figures: dict[str, Any]) -> None:
    """Write the raw figures as JSON when ``path`` is given."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
