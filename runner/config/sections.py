"""The sections of the settings object: each stage gets only the section it needs.

As kopf's ``OperatorSettings`` and controller-runtime's ``manager.Options``, the one
settings object (:class:`runner.config.settings.Settings`) is grouped by who reads it:

- :class:`AnsibleSettings`: how one Ansible run is started (reconcile, preview, webhooks,
  the dev loop);
- :class:`ReconcileSettings`: the workers of every watch and what one reconcile does around
  its Ansible run (resync, timeouts, back-off, the restart spread, the run cap, the proxy);
- :class:`ElectionSettings`: leader election and sharding on Leases;
- :class:`ServingSettings`: the metrics, custom-metrics and health listeners;
- :class:`WebhookSettings`: the admission webhook server;
- :class:`LogSettings`: the log format and level.

Every environment override is resolved before a section is built (the per-watch maps
below), so a section is a plain value: reading it never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from runner.base import logs
from runner.kube.types import GVK

DEFAULT_RECONCILE_PERIOD = 10 * 3600.0  # operator-sdk PR #5781: 10h
#: --reconcile-timeout: generous, so only a run that hangs (a wait on something that
#: never comes) is killed; a watch's ``reconcileTimeout`` overrides it; 0 disables.
DEFAULT_RECONCILE_TIMEOUT = 3600.0
#: ansible-operator's runner directory: private data dirs and artifacts of every run.
DEFAULT_RUNNER_DIR = Path("/tmp/ansible-operator/runner")
#: The artifacts every CR's runs leave there, at most (0: no cap beyond maxRunnerArtifacts).
DEFAULT_ARTIFACTS_MAX_BYTES = 1 << 30
#: Environment variable for --warm-launcher-idle-seconds when the flag is not given.
WARM_LAUNCHER_IDLE_ENV = "PLAYBOOK_OPERATOR_WARM_LAUNCHER_IDLE_SECONDS"
#: The longest idle time a launcher pool accepts (a year): a timer must be able to wait it.
WARM_LAUNCHER_IDLE_MAX = 365 * 24 * 3600


class LogEvents(Enum):
    """How much of each Ansible run is logged (operator-sdk's ``--ansible-log-events``)."""

    TASKS = "Tasks"
    EVERYTHING = "Everything"
    NOTHING = "Nothing"
    # Ours: a run in a few lines — tasks that changed something, failures, debug output,
    # warnings; no task starts. ``--zap-devel``'s default (``make run``).
    CHANGES = "Changes"


@dataclass(frozen=True)
class AnsibleSettings:
    """How one Ansible run is started."""

    verbosity: int = 2  # --ansible-verbosity
    #: ANSIBLE_VERBOSITY_<KIND>_<GROUP>, resolved per watch at start-up
    verbosities: Mapping[GVK, int] = field(default_factory=dict)
    args: str = ""  # --ansible-args
    roles_path: tuple[str, ...] = ()
    collections_path: tuple[str, ...] = ()
    log_events: LogEvents = LogEvents.TASKS
    debug_logs: bool = False  # ANSIBLE_DEBUG_LOGS: print each run's whole output
    runner_dir: Path = DEFAULT_RUNNER_DIR
    warm: bool = True  # start ansible-playbook and modules from warm launchers (runner.warm)
    warm_launcher_max_runs: int = 1000  # replace a launcher after this many runs; 0: never
    warm_launcher_max_rss: int = 512  # MiB; replace a launcher above this RSS; 0: no cap
    #: launchers that served no run for this long exit; the next run starts them; 0: never
    warm_launcher_idle_seconds: int = 120
    #: --max-runner-artifacts-size: the runner dir's artifacts across CRs (runner.ansible.retention)
    artifacts_max_bytes: int = DEFAULT_ARTIFACTS_MAX_BYTES

    def verbosity_for(self, gvk: GVK) -> int:
        """``ANSIBLE_VERBOSITY_<KIND>_<GROUP>`` (0-7), else ``--ansible-verbosity``."""
        return self.verbosities.get(gvk, self.verbosity)


@dataclass(frozen=True)
class ReconcileSettings:
    """The workers of every watch, and what a reconcile does around its Ansible run."""

    reconcile_period: float = DEFAULT_RECONCILE_PERIOD
    reconcile_timeout: float = DEFAULT_RECONCILE_TIMEOUT  # seconds per run; 0: no limit
    max_concurrent_reconciles: int = 1  # workers per watch (the CLI's default: CPU quota)
    #: MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP> (or WORKER_…), resolved per watch
    workers: Mapping[GVK, int] = field(default_factory=dict)
    max_concurrent_runs: int = 0  # Ansible runs at once across every kind; 0: no cap
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    # After a restart, CRs that succeeded and whose children did not change run spread
    # over this window (runner.reconcile.startup); 0: all at once, as upstream.
    startup_resync_window: float = 300.0
    startup_resync_rate: float = 5.0  # spread runs started per second at most; 0: no cap
    inject_owner_ref: bool = True
    cache_reads: bool = True  # serve roles' GETs of watched kinds from informer caches
    proxy_port: int = 0  # any free port; each run's kubeconfig names it
    #: The field manager of status writes and prunes: the operator's name
    #: (--leader-election-id, $OPERATOR_NAME), as a server-side apply names its writer.
    field_manager: str = "playbook-operator"

    def workers_for(self, gvk: GVK) -> int:
        """Workers for one watch: its environment override, else ``--max-concurrent-reconciles``."""
        return self.workers.get(gvk, max(1, self.max_concurrent_reconciles))


@dataclass(frozen=True)
class ElectionSettings:
    """Leader election (one active replica) or sharding (each replica its share)."""

    leader_elect: bool = False
    lease_name: str = "playbook-operator"  # --leader-election-id, $OPERATOR_NAME, default
    namespace: str = ""  # --leader-election-namespace; empty: the pod's namespace
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    sharded: bool = False  # active-active replicas, each reconciling its share
    replica: str = ""  # sharded: this replica (--replica-id, $POD_NAME, the host name)
    shard_group: str = ""  # sharded: prefix and label of the replicas' Leases


@dataclass(frozen=True)
class ServingSettings:
    """The runner's own listeners: metrics, custom metrics, health probes."""

    metrics_bind_address: str = ":8080"
    metrics_secure: bool = False  # HTTPS for /metrics
    metrics_require_rbac: bool = False  # TokenReview + SubjectAccessReview per scraper
    metrics_cert_dir: str = ""  # tls.crt/tls.key; empty: self-signed at start-up
    health_probe_bind_address: str = ":6789"
    custom_metrics_bind_address: str = "127.0.0.1:5050"


@dataclass(frozen=True)
class WebhookSettings:
    """Admission webhooks (runner.webhook), served only when a watch has validation/mutation."""

    enabled: bool = True  # ENABLE_WEBHOOKS=false (kubebuilder's switch): not served
    port: int = 9443
    host: str = ""  # every interface, as controller-runtime's webhook server
    cert_dir: Path = Path("/tmp/k8s-webhook-server/serving-certs")  # tls.crt, tls.key
    max_concurrent: int = 4  # webhook runs at once, beside the reconciles' workers
    # PEM of the CA whose client certificates may call (controller-runtime's ClientCAName);
    # None: client-ca.crt in cert_dir when there is one, else no client authentication.
    client_ca: Path | None = None


@dataclass(frozen=True)
class LogSettings:
    """The runner's log lines (zap's flags)."""

    format: logs.LogFormat = logs.LogFormat.JSON
    level: int = logging.INFO  # a logging level; below DEBUG: zap's integer levels > 1
    time_encoding: logs.TimeEncoding = logs.TimeEncoding.ISO8601
    stacktrace_level: int | None = None  # records at or above it carry a stack trace
