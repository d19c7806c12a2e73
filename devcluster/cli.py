"""The ``devcluster`` command: build, up, down, status, which, env.

A thin layer over :mod:`devcluster.builder` and :class:`devcluster.cluster.Cluster`; the
Makefile's ``cluster-*`` targets call it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from devcluster import binaries, builder, cluster, errors, images, nodeconfig, placement


def _cluster(args: argparse.Namespace) -> cluster.Cluster:
    return cluster.Cluster(args.data_dir, out=print)


def _build(args: argparse.Namespace) -> int:
    steps = builder.build(force=args.force, node=args.node == "real")
    print(builder.summary(steps))
    return 0


def _up(args: argparse.Namespace) -> int:
    # Binaries the environment supplies (envtest conventions) are not rebuilt.
    steps = builder.build(skip_overridden=True, node=args.node == "real")
    if any(step.built for step in steps):
        print(builder.summary(steps))
    if args.kwok == "off" and args.node != "real":
        print("devcluster: --kwok off needs --node real (no node would take pods)", file=sys.stderr)
        return 2
    target = _cluster(args)
    target.start(timeout=args.timeout)
    if args.node == "real":
        mode = nodeconfig.Placement.ONLY if args.kwok == "off" else nodeconfig.Placement.SHARED
        target.add_real_node(timeout=max(args.timeout, 120.0), mode=mode)
        print(f"real node:    {placement.describe(mode)}")
    print(f"kubeconfig: {target.kubeconfig}")
    print(f"use it with:  export KUBECONFIG={shlex.quote(str(target.kubeconfig))}")
    print(f"kubectl:      {binaries.resolve(binaries.KUBECTL)}")
    return 0


def _down(args: argparse.Namespace) -> int:
    target = _cluster(args)
    if args.node == "real":
        target.remove_real_node()
        print(f"real node of the cluster in {target.data_dir} stopped")
        return 0
    target.stop(timeout=args.timeout, purge=not args.keep_data)
    print(f"cluster in {target.data_dir} stopped")
    return 0


def _status(args: argparse.Namespace) -> int:
    report = _cluster(args).status()
    print(report.render())
    return 0 if report.healthy else 1


def _load(args: argparse.Namespace) -> int:
    paths = nodeconfig.Paths.of(_cluster(args).layout)
    for image in args.images:
        if images.load(image=image, paths=paths):
            print(f"loaded {image} into the real node ({nodeconfig.NODE_NAME})")
        else:
            print(f"{image}: the real node ({nodeconfig.NODE_NAME}) already has this image")
    return 0


def _which(args: argparse.Namespace) -> int:
    print(binaries.resolve(args.name))
    return 0


def _env(args: argparse.Namespace) -> int:
    target = _cluster(args)
    kubectl_dir = binaries.resolve(binaries.KUBECTL).parent
    print(f"export KUBECONFIG={shlex.quote(str(target.kubeconfig))}")
    print(f'export PATH={shlex.quote(str(kubectl_dir))}:"$PATH"')
    return 0


NODES = ("fake", "real")
NODE_HELP = (
    "real: also build/run a real node (containerd, kubelet, kube-proxy; root) beside "
    "kwok's fake one, tainted so only pods that ask for it land there"
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="devcluster", description="Embedded local Kubernetes control plane (no Docker)."
    )
    top.add_argument(
        "--data-dir",
        type=Path,
        default=cluster.default_data_dir(),
        help="where the cluster keeps its state (default: %(default)s)",
    )
    sub = top.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build etcd, the k8s multicall binary and kwok (if stale)")
    b.add_argument("--force", action="store_true", help="rebuild even if up to date")
    b.add_argument("--node", choices=NODES, default="fake", help=NODE_HELP)
    b.set_defaults(run=_build)
    u = sub.add_parser("up", help="start the control plane (no-op if already running)")
    u.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness")
    u.add_argument("--node", choices=NODES, default="fake", help=NODE_HELP)
    u.add_argument(
        "--kwok",
        choices=("on", "off"),
        default="on",
        help="off (with --node real): kwok's simulated node takes no pods (tainted), the "
        "real node takes every pod, as a kind node would; on a running node, switches it",
    )
    u.set_defaults(run=_up)
    d = sub.add_parser("down", help="stop every process of the control plane")
    d.add_argument("--timeout", type=float, default=10.0, help="seconds before SIGKILL")
    d.add_argument("--keep-data", action="store_true", help="keep etcd data, certs, kubeconfig")
    d.add_argument(
        "--node",
        choices=("all", "real"),
        default="all",
        help="real: stop only the real node (the control plane keeps running)",
    )
    d.set_defaults(run=_down)
    s = sub.add_parser("status", help="processes, ports, /readyz, node; exit 1 if unhealthy")
    s.set_defaults(run=_status)
    ld = sub.add_parser(
        "load", help="load local podman images into the real node's containerd (no registry)"
    )
    ld.add_argument("images", nargs="+", metavar="IMAGE")
    ld.set_defaults(run=_load)
    w = sub.add_parser("which", help="print the path of a binary (envtest lookup rules)")
    w.add_argument("name", choices=binaries.NAMES)
    w.set_defaults(run=_which)
    e = sub.add_parser("env", help="print shell export lines for KUBECONFIG and kubectl")
    e.set_defaults(run=_env)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except errors.DevClusterError as exc:
        print(f"devcluster: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `devcluster status | head`: the reader left; the work itself is done.
        return 141
    return code
