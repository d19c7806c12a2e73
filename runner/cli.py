"""The ``playbook-operator`` console command: flags → settings → manager.

This module only parses: it defines the commands and their flags and hands what it
parsed, as a mapping, to :mod:`runner.config.builder`, which builds the settings.
Every flag of operator-sdk's ``ansible-operator run`` is accepted, with its
meaning or as a documented no-op, so deployments move over unchanged: its own
flags, controller-runtime's zap logging flags and the ``--config`` manager file.
Booleans accept Go's ``--flag=false`` form; names are never abbreviated (pflag
does not abbreviate either).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Sequence

import runner
from runner.base import errors, logs
from runner.config import builder, options, sections, watches
from runner.tools.scaffold import commands as scaffold_commands

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


def _count(text: str) -> int:
    """A whole number >= 0 (0: the limit is off)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _log_events(text: str) -> sections.LogEvents:
    for choice in sections.LogEvents:
        if choice.value.lower() == text.lower():  # ansible-operator ignores case
            return choice
    raise argparse.ArgumentTypeError(
        f"expected Tasks, Everything, Nothing or Changes, got {text!r}"
    )


def _zap(parse: Callable[[str], int]) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return convert


def _time_encoding(text: str) -> logs.TimeEncoding:
    try:
        return logs.TimeEncoding(text.lower())
    except ValueError:
        names = ", ".join(e.value for e in logs.TimeEncoding)
        raise argparse.ArgumentTypeError(f"expected one of {names}, got {text!r}") from None


def _flag(parser: argparse.ArgumentParser, *names: str, **kwargs: object) -> None:
    parser.add_argument(*names, **kwargs)  # type: ignore[arg-type]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="playbook-operator", description=__doc__)
    top.add_argument(
        "--version", action="version", version=f"playbook-operator {runner.__version__}"
    )
    commands = top.add_subparsers(dest="command")
    run = commands.add_parser(
        "run", help="run the operator (watch, reconcile with Ansible)", allow_abbrev=False
    )
    scaffold_commands.add_commands(commands, boolean=_bool)  # init, create api/webhook
    # The flags' defaults are the sections' (--max-concurrent-reconciles' is the CPU quota).
    ansible = sections.AnsibleSettings()
    reconcile = sections.ReconcileSettings()
    election = sections.ElectionSettings()
    serving = sections.ServingSettings()
    webhooks = sections.WebhookSettings()
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
        default=reconcile.reconcile_period,
        help="default resync period (Go duration, default 10h)",
    )
    _flag(
        run,
        "--reconcile-timeout",
        type=_duration,
        default=reconcile.reconcile_timeout,
        help="how long one Ansible run may take before it is killed (Go duration, "
        "default 1h; 0: no limit); a watch's reconcileTimeout overrides it",
    )
    _flag(
        run,
        "--max-concurrent-reconciles",
        type=int,
        default=options.default_workers(),
        help="workers per watch (default: the container's CPU quota, rounded up; "
        "without one, the CPU count)",
    )
    _flag(
        run,
        "--max-concurrent-runs",
        type=int,
        default=reconcile.max_concurrent_runs,
        help="Ansible runs at once across all watched kinds (default 0: no cap beyond "
        "each watch's workers)",
    )
    _flag(
        run,
        "--startup-resync-window",
        type=_duration,
        default=reconcile.startup_resync_window,
        help="after a restart, spread the first runs of CRs that succeeded and whose "
        "children did not change over this window (Go duration, default 5m; 0: run "
        "every CR at once, as ansible-operator does)",
    )
    _flag(
        run,
        "--startup-resync-rate",
        type=float,
        default=reconcile.startup_resync_rate,
        help="spread start-up runs started per second at most (default 5; 0: no cap)",
    )
    _flag(
        run,
        "--ansible-verbosity",
        type=int,
        default=ansible.verbosity,
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
        type=_log_events,
        default=None,
        metavar="{Tasks,Everything,Nothing,Changes}",
        help="how much of each run is logged (default Tasks; Changes with --zap-devel)",
    )
    _flag(
        run,
        "--warm",
        default=None,
        help=(
            "start ansible-playbook and Ansible modules by fork from pre-imported launchers "
            f"(default true; ${options.WARM_ENV}=false turns it off)"
        ),
        **b,
    )
    _flag(
        run,
        "--warm-launcher-max-runs",
        type=_count,
        default=ansible.warm_launcher_max_runs,
        help="replace a warm launcher after this many runs, between runs (default 1000; 0: never)",
    )
    _flag(
        run,
        "--warm-launcher-max-rss",
        type=_count,
        default=ansible.warm_launcher_max_rss,
        metavar="MIB",
        help="replace a warm launcher whose resident memory is above this many MiB, between "
        "runs (default 512; 0: no cap)",
    )
    _flag(
        run,
        "--inject-owner-ref",
        default=reconcile.inject_owner_ref,
        help="inject owner references into created objects",
        **b,
    )
    _flag(
        run,
        "--cache-reads",
        default=reconcile.cache_reads,
        help="serve roles' reads of watched kinds from the runner's caches",
        **b,
    )
    _flag(
        run,
        "--proxy-port",
        type=int,
        default=reconcile.proxy_port,
        help="port of the owner-injecting API proxy on 127.0.0.1 (default 0: any free port)",
    )
    _flag(
        run,
        "--metrics-bind-address",
        "--metrics-addr",
        default=serving.metrics_bind_address,
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
        "--webhook-port",
        type=int,
        default=webhooks.port,
        help="HTTPS port of the admission webhooks (watches with validation: or mutation:)",
    )
    _flag(
        run,
        "--webhook-host",
        default=webhooks.host,
        help="address the admission webhooks listen on (default: every interface)",
    )
    _flag(
        run,
        "--webhook-cert-dir",
        default=str(webhooks.cert_dir),
        help="directory with the webhooks' tls.crt and tls.key (reloaded when they change)",
    )
    _flag(
        run,
        "--webhook-max-concurrent",
        type=int,
        default=webhooks.max_concurrent,
        help="webhook runs at once, beside the reconciles (more wait up to half their timeout)",
    )
    _flag(
        run,
        "--health-probe-bind-address",
        default=serving.health_probe_bind_address,
        help="/healthz and /readyz address (0 disables)",
    )
    _flag(
        run,
        "--custom-metrics-bind-address",
        default=serving.custom_metrics_bind_address,
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
    _flag(
        run,
        "--leader-elect-lease-duration",
        "--lease-duration",
        dest="lease_duration",
        type=_duration,
        default=election.lease_duration,
        help="how long a standby waits before taking over an unrenewed Lease",
    )
    _flag(
        run,
        "--leader-elect-renew-deadline",
        "--renew-deadline",
        dest="renew_deadline",
        type=_duration,
        default=election.renew_deadline,
        help="how long the leader keeps retrying to renew before giving up",
    )
    _flag(
        run,
        "--leader-elect-resource-lock",
        default="leases",
        help="deprecated and ignored, as in ansible-operator: the lock is always a Lease",
    )
    _flag(
        run,
        "--sharded",
        default=None,
        help="active-active: every replica reconciles its share of the objects, owned "
        "through one Lease per replica (default false; $SHARDED=true turns it on; "
        "excludes --leader-elect)",
        **b,
    )
    _flag(
        run,
        "--replica-id",
        default="",
        help="this replica's name in sharded mode (default: $POD_NAME, else the host name)",
    )
    _flag(
        run,
        "--shard-group",
        default="",
        help="name shared by the replicas of one sharded operator: their Leases' prefix "
        "and label (default: the leader election id)",
    )
    _flag(
        run,
        "--config",
        default="",
        help="controller-runtime manager configuration file (ControllerManagerConfig); "
        "flags given on the command line win over it",
    )
    _flag(
        run,
        "--enable-http2",
        default=False,
        help="accepted and ignored: the runner serves HTTP/1.1 only "
        "(ansible-operator's default, HTTP/2 off)",
        **b,
    )
    _flag(
        run,
        "--graceful-shutdown-timeout",
        type=_duration,
        default=options.Settings.graceful_shutdown_timeout,
    )
    _flag(
        run,
        "--runner-dir",
        default=str(ansible.runner_dir),
        help="where per-CR private data dirs and artifacts live",
    )
    _flag(
        run,
        "--zap-encoder",
        "--log-format",
        dest="log_format",
        type=str.lower,
        default=None,
        choices=["json", "console"],
        help="log line encoding (default json; console with --zap-devel)",
    )
    _flag(
        run,
        "--zap-devel",
        default=False,
        help="development defaults: console encoding, debug level, stack traces from warnings",
        **b,
    )
    _flag(
        run,
        "--zap-log-level",
        "--log-level",
        dest="log_level",
        type=_zap(logs.zap_level),
        default=None,
        metavar="LEVEL",
        help="debug, info, error, panic, or an integer > 0 (1 is debug; 2 and up, "
        "more verbose still) (default info; debug with --zap-devel)",
    )
    _flag(
        run,
        "--zap-stacktrace-level",
        type=_zap(logs.zap_stacktrace_level),
        default=None,
        metavar="LEVEL",
        help="info, error or panic: lines at or above it carry a stack trace "
        "(default none, --zap-devel too: exceptions always carry their traceback)",
    )
    _flag(
        run,
        "--zap-time-encoding",
        type=_time_encoding,
        default=logs.TimeEncoding.ISO8601,
        metavar="ENCODING",
        help="epoch, millis, nano, iso8601, rfc3339 or rfc3339nano (default iso8601)",
    )
    _flag(
        run,
        "--backoff-base",
        type=_duration,
        default=reconcile.backoff_base,
        help="first retry delay after a failed reconcile",
    )
    _flag(
        run,
        "--backoff-max",
        type=_duration,
        default=reconcile.backoff_max,
        help="cap of the retry delay",
    )
    _flag(
        run,
        "--dev",
        default=False,
        help="development mode: reconcile again when roles, playbooks, vars files or "
        "watches.yaml change (runs use a snapshot; a broken edit keeps the last good one)",
        **b,
    )
    preview = commands.add_parser(
        "preview",
        help="show what a CR would change: its role in check mode, writes refused",
        allow_abbrev=False,
    )
    _flag(preview, "cr_file", metavar="CR.yaml", help="the custom resource to preview")
    _flag(preview, "--watches-file", default="./watches.yaml", help="path to watches.yaml")
    _flag(preview, "--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG, ...)")
    _flag(
        preview,
        "--namespace",
        "-n",
        default=None,
        help="namespace of a CR whose file names none (default: the kubeconfig's)",
    )
    _flag(preview, "--ansible-args", default="", help="extra arguments for ansible-playbook")
    _flag(preview, "--ansible-roles-path", default="", help="extra roles path")
    _flag(preview, "--ansible-collections-path", default="", help="extra collections path")
    _flag(preview, "--output", "-o", choices=["text", "json"], default="text", help="format")
    _rbac_flags(commands)
    _runs_flags(commands)
    return top


def _runs_flags(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``playbook-operator runs`` (runner.tools.runs): a CR's recent runs from its artifacts."""
    runs = commands.add_parser(
        "runs",
        help="a CR's recent runs: trigger, start, duration, result, failed task",
        allow_abbrev=False,
    )
    _flag(runs, "target", metavar="KIND/NAME", help="e.g. memcached/memcached-sample")
    _flag(runs, "--namespace", "-n", default=None, help="the CR's namespace (default: any)")
    _flag(
        runs,
        "--runner-dir",
        default=str(sections.DEFAULT_RUNNER_DIR),
        help="the runner's --runner-dir",
    )
    _flag(runs, "--limit", type=int, default=20, help="newest runs shown (default 20)")
    _flag(runs, "--output", "-o", choices=["text", "json"], default="text", help="format")


def _rbac_flags(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``playbook-operator rbac`` (runner.tools.rbac): least-privilege rules from runs."""
    rbac = commands.add_parser(
        "rbac",
        help="the RBAC rules the operator's runs used: print, check or write role.yaml",
        allow_abbrev=False,
    )
    _flag(rbac, "--from", dest="source", default="", help="/debug/rbac URL or a saved JSON file")
    _flag(rbac, "--token", default="", help="bearer token for --from's URL")
    _flag(rbac, "--token-file", default="", help="file holding the bearer token")
    _flag(rbac, "--ca-file", default="", help="CA bundle for --from's URL")
    _flag(rbac, "--insecure-skip-tls-verify", action="store_true", help="do not verify TLS")
    _flag(
        rbac,
        "--sample",
        dest="samples",
        action="append",
        default=[],
        metavar="CR.yaml",
        help="run the role once for this CR in check mode (repeatable)",
    )
    _flag(rbac, "--role-file", default="config/rbac/role.yaml", help="the role file to compare")
    _flag(rbac, "--write", action="store_true", help="rewrite the role file with the rules")
    _flag(rbac, "--check", action="store_true", help="exit 1 on a denial or a difference")
    _flag(rbac, "--watches-file", default="./watches.yaml", help="path to watches.yaml")
    _flag(rbac, "--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG, ...)")
    _flag(rbac, "--namespace", "-n", default=None, help="namespace of samples that name none")
    _flag(rbac, "--ansible-args", default="", help="extra arguments for ansible-playbook")
    _flag(rbac, "--ansible-roles-path", default="", help="extra roles path")
    _flag(rbac, "--ansible-collections-path", default="", help="extra collections path")


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; ``args.given`` holds the ``run`` flags given explicitly
    (what a ``--config`` file may not override)."""
    top = parser()
    args = top.parse_args(argv)
    run = next(
        choices["run"]
        for action in top._actions
        if isinstance(choices := getattr(action, "choices", None), dict) and "run" in choices
    )
    known = {name for action in run._actions for name in action.option_strings}
    tokens = sys.argv[1:] if argv is None else list(argv)
    args.given = frozenset(
        token.split("=", 1)[0] for token in tokens if token.split("=", 1)[0] in known
    )
    return args


def build_settings(args: argparse.Namespace, *, environ: dict[str, str]) -> options.Settings:
    """The settings of ``run`` from what was parsed (:mod:`runner.config.builder`)."""
    given: frozenset[str] = getattr(args, "given", frozenset())
    return builder.build(vars(args), given=given, environ=environ, log=log)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if getattr(args, "scaffold", None):
        return scaffold_commands.run(args)
    if args.command == "preview":
        from runner.tools import preview  # noqa: PLC0415 - late, as the manager below

        return preview.main(args, environ=dict(os.environ))
    if args.command == "rbac":
        from runner.tools import rbac  # noqa: PLC0415 - late, as preview above

        return rbac.main(args, environ=dict(os.environ))
    if args.command == "runs":
        from runner.tools import runs  # noqa: PLC0415 - late, as preview above

        return runs.main(args)
    if args.command != "run":
        parser().print_help()
        return 2
    environ = dict(os.environ)
    logging_section = builder.log_settings(vars(args))
    logs.setup(
        fmt=logging_section.format,
        level=logging_section.level,
        time_encoding=logging_section.time_encoding,
        stacktrace_level=logging_section.stacktrace_level,
    )
    try:
        settings = build_settings(args, environ=environ)
    except errors.ConfigError as exc:
        # Stop before anything is watched; the message names file, entry and field.
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2
    # Late: --version and config errors stay fast.
    from runner.operations import manager  # noqa: PLC0415
    from runner.tools import devloop  # noqa: PLC0415

    try:
        wanted = settings.ansible.runner_dir
        with options.claim_runner_dir(wanted) as runner_dir:
            if runner_dir != wanted:
                log.warning(
                    "runner directory in use by another runner process; using a directory "
                    "of its own",
                    extra={"wanted": str(wanted), "using": str(runner_dir)},
                )
            settings = dataclasses.replace(
                settings, ansible=dataclasses.replace(settings.ansible, runner_dir=runner_dir)
            )
            if settings.dev:
                argv_again = sys.argv[1:] if argv is None else list(argv)
                return devloop.run(settings=settings, runtime=manager.Manager, argv=argv_again)
            return manager.Manager(settings).run()
    except errors.ConfigError as exc:
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
