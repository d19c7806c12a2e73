"""The ``playbook-operator`` console command: flags → settings → manager.

Flag names follow operator-sdk's ``ansible-operator run`` so deployments move
over unchanged (booleans accept Go's ``--flag=false`` form).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import runner
from runner import errors, logs, watches
from runner import settings as settings_mod

log = logging.getLogger("runner.cli")


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "t", "true", "yes"):
        return True
    if lowered in ("0", "f", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _duration(text: str) -> float:
    try:
        return watches.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _flag(parser: argparse.ArgumentParser, *names: str, **kwargs: object) -> None:
    parser.add_argument(*names, **kwargs)  # type: ignore[arg-type]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="playbook-operator", description=__doc__)
    top.add_argument(
        "--version", action="version", version=f"playbook-operator {runner.__version__}"
    )
    commands = top.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run the operator (watch, reconcile with Ansible)")
    defaults = settings_mod.Settings(watches_file=Path("watches.yaml"))
    b = {"type": _bool, "nargs": "?", "const": True, "metavar": "BOOL"}
    _flag(run, "--watches-file", default="./watches.yaml", help="path to watches.yaml")
    _flag(
        run,
        "--kubeconfig",
        default=None,
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    _flag(
        run,
        "--reconcile-period",
        type=_duration,
        default=defaults.reconcile_period,
        help="default resync period (Go duration, default 10h)",
    )
    _flag(
        run,
        "--max-concurrent-reconciles",
        type=int,
        default=defaults.max_concurrent_reconciles,
        help="workers per watch (default: CPU count)",
    )
    _flag(
        run,
        "--ansible-verbosity",
        type=int,
        default=defaults.ansible_verbosity,
        choices=range(8),
        help="ansible-playbook verbosity 0-7",
    )
    _flag(run, "--ansible-args", default="", help="extra arguments for ansible-playbook")
    _flag(run, "--ansible-roles-path", default="", help="extra roles path (colon-separated)")
    _flag(
        run,
        "--ansible-collections-path",
        default="",
        help="extra collections path (colon-separated)",
    )
    _flag(
        run,
        "--ansible-log-events",
        default="Tasks",
        choices=[e.value for e in settings_mod.LogEvents],
    )
    _flag(
        run,
        "--inject-owner-ref",
        default=defaults.inject_owner_ref,
        help="inject owner references into created objects",
        **b,
    )
    _flag(
        run,
        "--cache-reads",
        default=defaults.cache_reads,
        help="serve roles' reads of watched kinds from the runner's caches",
        **b,
    )
    _flag(
        run,
        "--proxy-port",
        type=int,
        default=defaults.proxy_port,
        help="port of the owner-injecting API proxy (0: any free port)",
    )
    _flag(
        run,
        "--metrics-bind-address",
        "--metrics-addr",
        default=defaults.metrics_bind_address,
        help="Prometheus /metrics address (0 disables)",
    )
    _flag(
        run,
        "--metrics-secure",
        default=False,
        help="serve /metrics over HTTPS",
        **b,
    )
    _flag(
        run,
        "--metrics-require-rbac",
        default=False,
        help="scrapers need a token allowed to get /metrics (needs --metrics-secure)",
        **b,
    )
    _flag(
        run,
        "--metrics-cert-dir",
        default="",
        help="directory with tls.crt and tls.key (default: a self-signed certificate)",
    )
    _flag(
        run,
        "--health-probe-bind-address",
        default=defaults.health_probe_bind_address,
        help="/healthz and /readyz address (0 disables)",
    )
    _flag(
        run,
        "--custom-metrics-bind-address",
        default=defaults.custom_metrics_bind_address,
        help="where roles post custom metrics (osdk_metric)",
    )
    _flag(
        run,
        "--leader-elect",
        "--enable-leader-election",
        default=False,
        help="elect a leader with a Lease",
        **b,
    )
    _flag(run, "--leader-election-id", default="", help="name of the Lease")
    _flag(
        run,
        "--leader-election-namespace",
        default="",
        help="namespace of the Lease (default: own namespace)",
    )
    _flag(run, "--lease-duration", type=_duration, default=defaults.lease_duration)
    _flag(run, "--renew-deadline", type=_duration, default=defaults.renew_deadline)
    _flag(
        run,
        "--graceful-shutdown-timeout",
        type=_duration,
        default=defaults.graceful_shutdown_timeout,
    )
    _flag(
        run,
        "--runner-dir",
        default=str(defaults.runner_dir),
        help="where per-CR private data dirs and artifacts live",
    )
    _flag(run, "--log-format", "--zap-encoder", default="json", choices=["json", "console"])
    _flag(run, "--zap-devel", default=False, help="console logs at debug level", **b)
    _flag(
        run,
        "--log-level",
        "--zap-log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
    )
    _flag(
        run,
        "--backoff-base",
        type=_duration,
        default=defaults.backoff_base,
        help="first retry delay after a failed reconcile",
    )
    _flag(
        run,
        "--backoff-max",
        type=_duration,
        default=defaults.backoff_max,
        help="cap of the retry delay",
    )
    return top


def build_settings(args: argparse.Namespace, *, environ: dict[str, str]) -> settings_mod.Settings:
    if args.metrics_require_rbac and not args.metrics_secure:
        # A scraper's bearer token must never cross the network in clear text.
        raise errors.ConfigError("--metrics-require-rbac needs --metrics-secure")
    watches_file = Path(args.watches_file)
    roles_path = tuple(
        p
        for p in (args.ansible_roles_path or environ.get("ANSIBLE_ROLES_PATH", "")).split(":")
        if p
    )
    collections_path = tuple(
        p
        for p in (
            args.ansible_collections_path or environ.get("ANSIBLE_COLLECTIONS_PATH", "")
        ).split(":")
        if p
    )
    loaded = watches.load(
        watches_file,
        environ=environ,
        roles_path=roles_path,
        collections_path=collections_path,
        base_dir=Path.cwd(),  # operator-sdk resolves roles and playbooks against the CWD
    )
    return settings_mod.Settings(
        watches_file=watches_file,
        watches=tuple(loaded),
        kubeconfig=args.kubeconfig,
        watch_namespaces=settings_mod.parse_namespaces(environ.get("WATCH_NAMESPACE", "")),
        reconcile_period=args.reconcile_period,
        max_concurrent_reconciles=args.max_concurrent_reconciles,
        ansible_verbosity=args.ansible_verbosity,
        ansible_args=args.ansible_args,
        ansible_roles_path=roles_path,
        ansible_collections_path=collections_path,
        ansible_log_events=settings_mod.LogEvents(args.ansible_log_events),
        inject_owner_ref=args.inject_owner_ref,
        cache_reads=args.cache_reads,
        proxy_port=args.proxy_port,
        metrics_bind_address=args.metrics_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_require_rbac=args.metrics_require_rbac,
        metrics_cert_dir=args.metrics_cert_dir,
        health_probe_bind_address=args.health_probe_bind_address,
        custom_metrics_bind_address=args.custom_metrics_bind_address,
        leader_elect=args.leader_elect,
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        graceful_shutdown_timeout=args.graceful_shutdown_timeout,
        runner_dir=Path(args.runner_dir),
        log_format=settings_mod.LogFormat.CONSOLE
        if args.zap_devel
        else settings_mod.LogFormat(args.log_format),
        log_level="debug" if args.zap_devel else args.log_level,
        backoff_base=args.backoff_base,
        backoff_max=args.backoff_max,
        environ=environ,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "run":
        parser().print_help()
        return 2
    environ = dict(os.environ)
    fmt = (
        settings_mod.LogFormat.CONSOLE
        if args.zap_devel
        else settings_mod.LogFormat(args.log_format)
    )
    logs.setup(fmt=fmt, level="debug" if args.zap_devel else args.log_level)
    try:
        settings = build_settings(args, environ=environ)
    except errors.ConfigError as exc:
        # Stop before anything is watched; the message names file, entry and field.
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2
    from runner import manager  # noqa: PLC0415 - late: --version and config errors stay fast

    try:
        return manager.Manager(settings).run()
    except errors.ConfigError as exc:
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
