"""What `devcluster status` reports: each component's process and port, /readyz, and
whether the fake node is Ready; with a real node (``up --node real``), its containerd,
kubelet and kube-proxy rows and its Ready condition too. Read-only; it never starts or
stops anything."""

from __future__ import annotations

from dataclasses import dataclass

from devcluster import api, components, errors, layout, nodeconfig, ports, processes


@dataclass(frozen=True)
class Component:
    name: str
    pid: int | None
    alive: bool
    port: int | None
    listening: bool
    rss_kib: int


@dataclass(frozen=True)
class Report:
    data_dir: str
    server: str | None
    components: tuple[Component, ...]
    ready: bool
    readyz: str
    node_ready: bool | None
    #: the real node's Ready condition; None when the cluster has no real node
    real_node_ready: bool | None = None
    has_real_node: bool = False
    #: False while the real node takes every pod (``--kwok off``): kwok has no node.
    kwok_node: bool = True

    @property
    def healthy(self) -> bool:
        real_ok = bool(self.real_node_ready) if self.has_real_node else True
        return (
            self.ready
            and all(c.alive for c in self.components)
            and (bool(self.node_ready) or not self.kwok_node)
            and real_ok
        )

    def render(self) -> str:
        lines = [f"data dir: {self.data_dir}", f"server:   {self.server or '-'}"]
        lines.append(f"{'COMPONENT':<25} {'PID':>8} {'ALIVE':<6} {'PORT':>6} {'RSS MiB':>8}")
        for c in self.components:
            port = "-" if c.port is None else f"{c.port}{'' if c.listening else '!'}"
            lines.append(
                f"{c.name:<25} {c.pid or '-':>8} {'yes' if c.alive else 'no':<6} {port:>6} "
                f"{c.rss_kib / 1024:>8.0f}"
            )
        total = sum(c.rss_kib for c in self.components) / 1024
        lines.append(f"{'total RSS':<25} {'':>8} {'':<6} {'':>6} {total:>8.0f}")
        lines.append(f"readyz:   {'ok' if self.ready else 'not ready'} ({self.readyz})")
        node = {None: "unknown", True: "Ready", False: "not Ready"}[self.node_ready]
        if not self.kwok_node:
            node = "removed (--kwok off: the real node takes every pod)"
        lines.append(f"node {components.NODE_NAME}: {node}")
        if self.has_real_node:
            real = {None: "unknown", True: "Ready", False: "not Ready"}[self.real_node_ready]
            lines.append(f"node {nodeconfig.NODE_NAME}: {real} (real)")
        return "\n".join(lines)


def node_ready(client: api.Api, name: str = components.NODE_NAME) -> bool | None:
    """True/False from the node's Ready condition; None when the node cannot be read."""
    try:
        node = client.call("GET", f"/api/v1/nodes/{name}", timeout=5.0)
    except errors.ApiError:
        return None
    for condition in node.get("status", {}).get("conditions", []):
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _node_port(name: str, node_state: nodeconfig.State) -> int | None:
    return {
        nodeconfig.KUBELET: node_state.ports.kubelet_healthz,
        nodeconfig.KUBE_PROXY: node_state.ports.proxy_healthz,
        nodeconfig.NODE_REGISTRY: node_state.ports.registry or None,
    }.get(name)


def collect(*, where: layout.Layout, client: api.Api | None) -> Report:
    state = where.read_state()
    node_state = nodeconfig.Paths.of(where).read_state()
    names = components.ORDER + (nodeconfig.ORDER if node_state else ())
    rows = []
    for name in names:
        handle = processes.read(where.pid_file(name))
        alive = handle is not None and processes.alive(handle)
        if name in nodeconfig.ORDER and node_state is not None:
            port = _node_port(name, node_state)
        else:
            port = components.port_of(name, state.ports) if state else None
        rows.append(
            Component(
                name=name,
                pid=handle.pid if handle else None,
                alive=alive,
                port=port,
                listening=port is not None and ports.listening(port),
                rss_kib=processes.rss_kib(handle) if handle and alive else 0,
            )
        )
    ready, detail = client.readyz() if client else (False, "not started")
    return Report(
        data_dir=str(where.data_dir),
        server=state.server if state else None,
        components=tuple(rows),
        ready=ready,
        readyz=detail,
        node_ready=node_ready(client) if client and ready else None,
        has_real_node=node_state is not None,
        kwok_node=node_state is None or node_state.placement is nodeconfig.Placement.SHARED,
        real_node_ready=(
            node_ready(client, nodeconfig.NODE_NAME) if node_state and client and ready else None
        ),
    )
