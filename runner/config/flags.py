"""The flags of ``playbook-operator run``: their names, aliases, defaults and help.

They live beside the sections they fill: each flag's default is its section's (or
:mod:`runner.config.settings`'; ``--max-concurrent-reconciles``' is the CPU quota), their
values are checked by :mod:`runner.config.flagtypes`, and :mod:`runner.config.builder`
turns what was parsed into the settings. ``runner.cli`` only adds them to its ``run``
sub-command and parses.
Every flag of operator-sdk's ``ansible-operator run`` is here, with its meaning or as a
documented no-op, including its aliases and deprecated spellings; booleans accept Go's
``--flag=false`` form.
"""

from __future__ import annotations

import argparse
from typing import Final

from runner.base import logs
from runner.config import flagtypes, sections
from runner.config.settings import WARM_ENV, Settings, default_workers

# A Go-style boolean: --flag alone is true, --flag=false is false.
_BOOL: Final[dict[str, object]] = {
    "type": flagtypes.boolean,
    "nargs": "?",
    "const": True,
    "metavar": "BOOL",
}


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """Add every flag of ``run`` to ``parser``, in the order ``--help`` lists them."""
    _reconcile_flags(parser)
    _ansible_flags(parser)
    _serving_flags(parser)
    _election_flags(parser)
    _process_flags(parser)
    _logging_flags(parser)
    _retry_flags(parser)


def _flag(parser: argparse.ArgumentParser, *names: str, **kwargs: object) -> None:
    parser.add_argument(*names, **kwargs)  # type: ignore[arg-type]


def add_project_flags(parser: argparse.ArgumentParser) -> None:
    """``--watches-file`` and ``--kubeconfig``: the project and its cluster (``run``,
    ``preview`` and ``rbac`` declare them here, once)."""
    _flag(parser, "--watches-file", default="./watches.yaml", help="path to watches.yaml")
    _flag(
        parser,
        "--kubeconfig",
        default=None,
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )


def add_ansible_path_flags(parser: argparse.ArgumentParser) -> None:
    """``--ansible-args`` and the roles and collections paths (``run``, ``preview``,
    ``rbac``)."""
    _flag(parser, "--ansible-args", default="", help="extra arguments for ansible-playbook")
    _flag(parser, "--ansible-roles-path", default="", help="extra roles path (colon-separated)")
    _flag(
        parser,
        "--ansible-collections-path",
        default="",
        help="extra collections path (colon-separated)",
    )


def _reconcile_flags(parser: argparse.ArgumentParser) -> None:
    """watches.yaml, the API server, and when and how often CRs reconcile."""
    reconcile = sections.ReconcileSettings()
    add_project_flags(parser)
    _flag(
        parser,
        "--reconcile-period",
        type=flagtypes.duration,
        default=reconcile.reconcile_period,
        help="default resync period (Go duration, default 10h)",
    )
    _flag(
        parser,
        "--reconcile-timeout",
        type=flagtypes.duration,
        default=reconcile.reconcile_timeout,
        help="how long one Ansible run may take before it is killed (Go duration, "
        "default 1h; 0: no limit); a watch's reconcileTimeout overrides it",
    )
    _flag(
        parser,
        "--max-concurrent-reconciles",
        type=int,
        default=default_workers(),
        help="workers per watch (default: the container's CPU quota, rounded up; "
        "without one, the CPU count)",
    )
    _flag(
        parser,
        "--max-concurrent-runs",
        type=int,
        default=reconcile.max_concurrent_runs,
        help="Ansible runs at once across all watched kinds (default 0: no cap beyond "
        "each watch's workers)",
    )
    _flag(
        parser,
        "--startup-resync-window",
        type=flagtypes.duration,
        default=reconcile.startup_resync_window,
        help="after a restart, spread the first runs of CRs that succeeded and whose "
        "children did not change over this window (Go duration, default 5m; 0: run "
        "every CR at once, as ansible-operator does)",
    )
    _flag(
        parser,
        "--startup-resync-rate",
        type=float,
        default=reconcile.startup_resync_rate,
        help="spread start-up runs started per second at most (default 5; 0: no cap)",
    )


def _ansible_flags(parser: argparse.ArgumentParser) -> None:
    """How Ansible runs: its arguments, the warm launchers and the API proxy."""
    ansible = sections.AnsibleSettings()
    reconcile = sections.ReconcileSettings()
    _flag(
        parser,
        "--ansible-verbosity",
        type=int,
        default=ansible.verbosity,
        choices=range(8),
        help="ansible-playbook verbosity 0-7",
    )
    add_ansible_path_flags(parser)
    _flag(
        parser,
        "--ansible-log-events",
        type=flagtypes.log_events,
        default=None,
        metavar="{Tasks,Everything,Nothing,Changes}",
        help="how much of each run is logged (default Tasks; Changes with --zap-devel)",
    )
    _flag(
        parser,
        "--warm",
        default=None,
        help=(
            "start ansible-playbook and Ansible modules by fork from pre-imported launchers "
            f"(default true; ${WARM_ENV}=false turns it off)"
        ),
        **_BOOL,
    )
    _flag(
        parser,
        "--warm-launcher-max-runs",
        type=flagtypes.count,
        default=ansible.warm_launcher_max_runs,
        help="replace a warm launcher after this many runs, between runs (default 1000; 0: never)",
    )
    _flag(
        parser,
        "--warm-launcher-max-rss",
        type=flagtypes.count,
        default=ansible.warm_launcher_max_rss,
        metavar="MIB",
        help="replace a warm launcher whose resident memory is above this many MiB, between "
        "runs (default 512; 0: no cap)",
    )
    _flag(
        parser,
        "--warm-launcher-idle-seconds",
        type=flagtypes.count,
        default=None,  # then $PLAYBOOK_OPERATOR_WARM_LAUNCHER_IDLE_SECONDS, then the default
        metavar="SECONDS",
        help="warm launchers that served no run for this long exit, to give their memory "
        "back; the next run starts them again (default "
        f"{ansible.warm_launcher_idle_seconds}, ${sections.WARM_LAUNCHER_IDLE_ENV}; 0: never)",
    )
    _flag(
        parser,
        "--inject-owner-ref",
        default=reconcile.inject_owner_ref,
        help="inject owner references into created objects",
        **_BOOL,
    )
    _flag(
        parser,
        "--cache-reads",
        default=reconcile.cache_reads,
        help="serve roles' reads of watched kinds from the runner's caches",
        **_BOOL,
    )
    _flag(
        parser,
        "--proxy-port",
        type=int,
        default=reconcile.proxy_port,
        help="port of the owner-injecting API proxy on 127.0.0.1 (default 0: any free port)",
    )


def _serving_flags(parser: argparse.ArgumentParser) -> None:
    """The listeners: metrics, admission webhooks, health probes, custom metrics."""
    serving = sections.ServingSettings()
    webhooks = sections.WebhookSettings()
    _flag(
        parser,
        "--metrics-bind-address",
        "--metrics-addr",
        default=serving.metrics_bind_address,
        help="Prometheus /metrics address (0 disables)",
    )
    _flag(
        parser,
        "--metrics-secure",
        default=False,
        help="serve /metrics over HTTPS",
        **_BOOL,
    )
    _flag(
        parser,
        "--metrics-require-rbac",
        default=False,
        help="scrapers need a token allowed to get /metrics (needs --metrics-secure)",
        **_BOOL,
    )
    _flag(
        parser,
        "--metrics-cert-dir",
        default="",
        help="directory with tls.crt and tls.key (default: a self-signed certificate)",
    )
    _flag(
        parser,
        "--webhook-port",
        type=int,
        default=webhooks.port,
        help="HTTPS port of the admission webhooks (watches with validation: or mutation:)",
    )
    _flag(
        parser,
        "--webhook-host",
        default=webhooks.host,
        help="address the admission webhooks listen on (default: every interface)",
    )
    _flag(
        parser,
        "--webhook-cert-dir",
        default=str(webhooks.cert_dir),
        help="directory with the webhooks' tls.crt and tls.key (reloaded when they change)",
    )
    _flag(
        parser,
        "--webhook-client-ca",
        default="",
        help="CA (PEM) whose client certificates may call the webhooks: the API server's "
        "(default: client-ca.crt in --webhook-cert-dir if present)",
    )
    _flag(
        parser,
        "--webhook-max-concurrent",
        type=int,
        default=webhooks.max_concurrent,
        help="webhook runs at once, beside the reconciles (more wait while a run still fits "
        "in the API server's timeout, then get the hook's failure policy)",
    )
    _flag(
        parser,
        "--health-probe-bind-address",
        default=serving.health_probe_bind_address,
        help="/healthz and /readyz address (0 disables)",
    )
    _flag(
        parser,
        "--custom-metrics-bind-address",
        default=serving.custom_metrics_bind_address,
        help="where roles post custom metrics (osdk_metric)",
    )


def _election_flags(parser: argparse.ArgumentParser) -> None:
    """Who reconciles: one elected leader, or every replica its shard."""
    election = sections.ElectionSettings()
    _flag(
        parser,
        "--leader-elect",
        "--enable-leader-election",
        default=False,
        help="elect a leader with a Lease",
        **_BOOL,
    )
    _flag(parser, "--leader-election-id", default="", help="name of the Lease")
    _flag(
        parser,
        "--leader-election-namespace",
        default="",
        help="namespace of the Lease (default: own namespace)",
    )
    _flag(
        parser,
        "--leader-elect-lease-duration",
        "--lease-duration",
        dest="lease_duration",
        type=flagtypes.duration,
        default=election.lease_duration,
        help="how long a standby waits before taking over an unrenewed Lease",
    )
    _flag(
        parser,
        "--leader-elect-renew-deadline",
        "--renew-deadline",
        dest="renew_deadline",
        type=flagtypes.duration,
        default=election.renew_deadline,
        help="how long the leader keeps retrying to renew before giving up",
    )
    _flag(
        parser,
        "--leader-elect-resource-lock",
        default="leases",
        help="deprecated and ignored, as in ansible-operator: the lock is always a Lease",
    )
    _flag(
        parser,
        "--sharded",
        default=None,
        help="active-active: every replica reconciles its share of the objects, owned "
        "through one Lease per replica (default false; $SHARDED=true turns it on; "
        "excludes --leader-elect)",
        **_BOOL,
    )
    _flag(
        parser,
        "--replica-id",
        default="",
        help="this replica's name in sharded mode (default: $POD_NAME, else the host name)",
    )
    _flag(
        parser,
        "--shard-group",
        default="",
        help="name shared by the replicas of one sharded operator: their Leases' prefix "
        "and label (default: the leader election id)",
    )


def _process_flags(parser: argparse.ArgumentParser) -> None:
    """The process: the --config manager file, HTTP/2, shutdown, the runner directory."""
    ansible = sections.AnsibleSettings()
    _flag(
        parser,
        "--config",
        default="",
        help="controller-runtime manager configuration file (ControllerManagerConfig); "
        "flags given on the command line win over it",
    )
    _flag(
        parser,
        "--enable-http2",
        default=False,
        help="accepted and ignored: the runner serves HTTP/1.1 only "
        "(ansible-operator's default, HTTP/2 off)",
        **_BOOL,
    )
    _flag(
        parser,
        "--graceful-shutdown-timeout",
        type=flagtypes.duration,
        default=Settings.graceful_shutdown_timeout,
    )
    _flag(
        parser,
        "--runner-dir",
        default=str(ansible.runner_dir),
        help="where per-CR private data dirs and artifacts live",
    )
    _flag(
        parser,
        "--max-runner-artifacts-size",
        type=flagtypes.size,
        default=ansible.artifacts_max_bytes,
        metavar="SIZE",
        help="the artifacts of every CR's runs together, at most (a quantity: 512Mi, 2Gi; "
        "default 1Gi; 0: no cap beyond each CR's maxRunnerArtifacts); the oldest runs "
        "of any CR go first, each CR keeps its last",
    )


def _logging_flags(parser: argparse.ArgumentParser) -> None:
    """controller-runtime's zap logging flags."""
    _flag(
        parser,
        "--zap-encoder",
        "--log-format",
        dest="log_format",
        type=str.lower,
        default=None,
        choices=["json", "console"],
        help="log line encoding (default json; console with --zap-devel)",
    )
    _flag(
        parser,
        "--zap-devel",
        default=False,
        help="development defaults: console encoding, debug level, stack traces from warnings",
        **_BOOL,
    )
    _flag(
        parser,
        "--zap-log-level",
        "--log-level",
        dest="log_level",
        type=flagtypes.zap(logs.zap_level),
        default=None,
        metavar="LEVEL",
        help="debug, info, error, panic, or an integer > 0 (1 is debug; 2 and up, "
        "more verbose still) (default info; debug with --zap-devel)",
    )
    _flag(
        parser,
        "--zap-stacktrace-level",
        type=flagtypes.zap(logs.zap_stacktrace_level),
        default=None,
        metavar="LEVEL",
        help="info, error or panic: lines at or above it carry a stack trace "
        "(default none, --zap-devel too: exceptions always carry their traceback)",
    )
    _flag(
        parser,
        "--zap-time-encoding",
        type=flagtypes.time_encoding,
        default=logs.TimeEncoding.ISO8601,
        metavar="ENCODING",
        help="epoch, millis, nano, iso8601, rfc3339 or rfc3339nano (default iso8601)",
    )


def _retry_flags(parser: argparse.ArgumentParser) -> None:
    """Retries after a failed reconcile, and the development loop."""
    reconcile = sections.ReconcileSettings()
    _flag(
        parser,
        "--backoff-base",
        type=flagtypes.duration,
        default=reconcile.backoff_base,
        help="first retry delay after a failed reconcile",
    )
    _flag(
        parser,
        "--backoff-max",
        type=flagtypes.duration,
        default=reconcile.backoff_max,
        help="cap of the retry delay",
    )
    _flag(
        parser,
        "--dev",
        default=False,
        help="development mode: reconcile again when roles, playbooks, vars files or "
        "watches.yaml change (runs use a snapshot; a broken edit keeps the last good one)",
        **_BOOL,
    )
