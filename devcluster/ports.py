"""Choosing loopback ports: the usual Kubernetes port when it is free, else any free one.

Everything listens on 127.0.0.1 only. Well-known ports make the default cluster's
kubeconfig stable; falling back to a kernel-chosen port lets several clusters
(pytest's, another engineer's) run on one machine.
"""

from __future__ import annotations

import socket

from devcluster import layout

DEFAULTS = layout.Ports(
    etcd_client=2379,
    etcd_peer=2380,
    apiserver=6443,
    controller_manager=10257,
    scheduler=10259,
    kubelet=10250,
)


def is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def any_free() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def choose(*, prefer_defaults: bool = True) -> layout.Ports:
    """Pick six distinct free ports (there is a window until the servers bind them)."""
    taken: set[int] = set()

    def pick(default: int) -> int:
        port = default if prefer_defaults and is_free(default) else any_free()
        while port in taken:
            port = any_free()
        taken.add(port)
        return port

    return layout.Ports(
        etcd_client=pick(DEFAULTS.etcd_client),
        etcd_peer=pick(DEFAULTS.etcd_peer),
        apiserver=pick(DEFAULTS.apiserver),
        controller_manager=pick(DEFAULTS.controller_manager),
        scheduler=pick(DEFAULTS.scheduler),
        kubelet=pick(DEFAULTS.kubelet),
    )


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
