"""The one settings object, built once at start-up from flags and environment.

Defaults live here and only here (they follow operator-sdk's ``ansible-operator
run``). The object is passed explicitly to whoever needs it; there are no
module-level globals. watches.yaml is parsed by :mod:`runner.watches` and kept
on the settings so every stage sees the same, validated configuration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from runner import errors, watches
from runner.kube.types import GVK

DEFAULT_RECONCILE_PERIOD = 10 * 3600.0  # operator-sdk PR #5781: 10h
VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"
RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"


class LogFormat(Enum):
    JSON = "json"
    CONSOLE = "console"


class LogEvents(Enum):
    """How much of each Ansible run is logged (operator-sdk's ``--ansible-log-events``)."""

    TASKS = "Tasks"
    EVERYTHING = "Everything"
    NOTHING = "Nothing"


@dataclass(frozen=True)
class Settings:
    watches_file: Path
    watches: tuple[watches.Watch, ...] = ()
    kubeconfig: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    reconcile_period: float = DEFAULT_RECONCILE_PERIOD
    max_concurrent_reconciles: int = field(default_factory=lambda: os.cpu_count() or 1)
    ansible_verbosity: int = 2
    ansible_args: str = ""
    ansible_roles_path: tuple[str, ...] = ()
    ansible_collections_path: tuple[str, ...] = ()
    ansible_log_events: LogEvents = LogEvents.TASKS
    inject_owner_ref: bool = True
    cache_reads: bool = True  # serve roles' GETs of watched kinds from informer caches
    proxy_port: int = 8888
    metrics_bind_address: str = ":8080"
    metrics_secure: bool = False  # HTTPS for /metrics
    metrics_require_rbac: bool = False  # TokenReview + SubjectAccessReview per scraper
    metrics_cert_dir: str = ""  # tls.crt/tls.key; empty: self-signed at start-up
    health_probe_bind_address: str = ":6789"
    custom_metrics_bind_address: str = "127.0.0.1:5050"
    leader_elect: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    runner_dir: Path = Path("/tmp/playbook-operator/runner")
    log_format: LogFormat = LogFormat.JSON
    log_level: str = "info"
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def workers_for(self, gvk: GVK) -> int:
        """Workers for one watch: ``MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>`` (or the
        deprecated ``WORKER_<KIND>_<GROUP>``), else ``--max-concurrent-reconciles``."""
        suffix = env_suffix(gvk)
        for name in (f"MAX_CONCURRENT_RECONCILES_{suffix}", f"WORKER_{suffix}"):
            number = self._env_int(name)
            if number is not None and number > 0:
                return number
        return max(1, self.max_concurrent_reconciles)

    def verbosity_for(self, gvk: GVK) -> int:
        """``ANSIBLE_VERBOSITY_<KIND>_<GROUP>`` (0-7), else ``--ansible-verbosity``."""
        number = self._env_int(f"ANSIBLE_VERBOSITY_{env_suffix(gvk)}")
        if number is not None and 0 <= number <= 7:
            return number
        return self.ansible_verbosity

    def _env_int(self, name: str) -> int | None:
        """An integer environment variable; unset or empty is None, anything else an error."""
        value = self.environ.get(name)
        if not value:
            return None
        try:
            return int(value)
        except ValueError as exc:
            raise errors.ConfigError(f"${name}: not an integer: {value!r}") from exc

    def leader_lease_name(self) -> str:
        return (
            self.leader_election_id or self.environ.get("OPERATOR_NAME", "") or "playbook-operator"
        )


def env_suffix(gvk: GVK) -> str:
    """``<KIND>_<GROUP>`` upper-cased with ``.`` and ``-`` as ``_``, operator-sdk's convention."""
    return f"{gvk.kind}_{gvk.group}".upper().replace(".", "_").replace("-", "_")


def parse_namespaces(value: str) -> tuple[str, ...]:
    """WATCH_NAMESPACE: empty means all namespaces; a comma list means several."""
    return tuple(sorted({part.strip() for part in value.split(",") if part.strip()}))
