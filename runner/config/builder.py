"""Builds the one settings object, once, at start-up.

The command line only parses (:mod:`runner.cli`); this module turns what it parsed —
flags by destination, as a mapping — together with the environment, the ``--config``
manager file (:mod:`runner.config.manager_file`) and watches.yaml into
:class:`runner.config.settings.Settings`, one section per stage
(:mod:`runner.config.sections`). Every environment override is resolved here: a bad one
stops the runner at start-up naming the variable, and a section is a plain value that
never raises when read.

Precedence, as ansible-operator's: a flag given on the command line, then the
``--config`` file, then the flag's default; ``WATCH_NAMESPACE`` wins over the file's
``cacheNamespace``.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

from runner.base import errors, logs
from runner.config import manager_file, sections, watches
from runner.config.settings import WARM_ENV, Settings, env_suffix, parse_bool, parse_namespaces
from runner.kube.types import GVK

#: Deprecated and current names of one setting: ansible-operator refuses both at once.
_EXCLUSIVE = (
    ("--leader-elect", "--enable-leader-election"),
    ("--metrics-bind-address", "--metrics-addr"),
)

# The sections' own defaults: a value no flag and no --config gave.
_ANSIBLE = sections.AnsibleSettings()
_RECONCILE = sections.ReconcileSettings()
_ELECTION = sections.ElectionSettings()
_SERVING = sections.ServingSettings()
_WEBHOOKS = sections.WebhookSettings()


class Flags:
    """Parsed flags by destination (argparse's namespace as a mapping), read typed."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self._values = values

    def get(self, name: str) -> object:
        return self._values.get(name)

    def text(self, name: str, default: str = "") -> str:
        value = self._values.get(name)
        return default if value is None else str(value)

    def number(self, name: str, default: float = 0.0) -> float:
        value = self._values.get(name)
        return default if value is None else float(value)  # type: ignore[arg-type]

    def whole(self, name: str, default: int = 0) -> int:
        value = self._values.get(name)
        return default if value is None else int(value)  # type: ignore[call-overload]

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self._values.get(name)
        return default if value is None else bool(value)


def log_settings(flags: Mapping[str, object]) -> sections.LogSettings:
    """Encoding, level, time encoding and stack-trace level; ``--zap-devel`` only changes
    the defaults of the others, as in controller-runtime."""
    read = Flags(flags)
    devel = read.boolean("zap_devel")
    level = read.get("log_level")
    stacktrace = read.get("zap_stacktrace_level")
    encoding = read.get("zap_time_encoding")
    # Unlike controller-runtime's development mode, --zap-devel adds no stack trace to
    # warnings: the runner's would show its own logging thread and read like a crash.
    # An exception's traceback is always shown; --zap-stacktrace-level adds the rest.
    return sections.LogSettings(
        format=logs.LogFormat(read.text("log_format") or ("console" if devel else "json")),
        level=level if isinstance(level, int) else logging.DEBUG if devel else logging.INFO,
        time_encoding=encoding
        if isinstance(encoding, logs.TimeEncoding)
        else logs.TimeEncoding.ISO8601,
        stacktrace_level=stacktrace if isinstance(stacktrace, int) else None,
    )


def build(
    flags: Mapping[str, object],
    *,
    given: frozenset[str],
    environ: Mapping[str, str],
    log: logging.Logger,
    base_dir: Path | None = None,
) -> Settings:
    """The settings of ``run``: ``flags`` by destination, ``given`` the flags named on the
    command line (what a ``--config`` file may not override), ``base_dir`` what roles and
    playbooks resolve against (operator-sdk: the working directory)."""
    merged = _merged(flags, given=given, log=log)
    read = Flags(merged)
    sharded = _checked(read, environ=environ)
    debug_logs = parse_bool(environ.get("ANSIBLE_DEBUG_LOGS", "false"))
    if debug_logs is None:
        log.info(
            "Could not parse environment variable as an boolean; using default value",
            extra={"envVar": "ANSIBLE_DEBUG_LOGS", "default": False},
        )
    logging_section = log_settings(merged)
    watches_file = Path(read.text("watches_file", "./watches.yaml"))
    roles_path = _paths(read.text("ansible_roles_path") or environ.get("ANSIBLE_ROLES_PATH", ""))
    collections_path = _paths(
        read.text("ansible_collections_path") or environ.get("ANSIBLE_COLLECTIONS_PATH", "")
    )
    loaded = tuple(
        watches.load(
            watches_file,
            environ=environ,
            roles_path=roles_path,
            collections_path=collections_path,
            base_dir=Path.cwd() if base_dir is None else base_dir,
        )
    )
    gvks = [watch.gvk for watch in loaded]
    kubeconfig = read.get("kubeconfig")
    return Settings(
        watches_file=watches_file,
        watches=loaded,
        kubeconfig=None if kubeconfig is None else str(kubeconfig),
        watch_namespaces=parse_namespaces(
            environ.get("WATCH_NAMESPACE", read.text("cache_namespace"))
        ),
        graceful_shutdown_timeout=read.number("graceful_shutdown_timeout", 30.0),
        dev=read.boolean("dev"),
        environ=environ,
        ansible=_ansible(
            read,
            gvks=gvks,
            environ=environ,
            roles_path=roles_path,
            collections_path=collections_path,
            debug_logs=bool(debug_logs),
        ),
        reconcile=_reconcile(read, gvks=gvks, environ=environ),
        election=_election(read, sharded=sharded, environ=environ),
        serving=_serving(read),
        webhooks=_webhooks(read, environ=environ),
        logging=logging_section,
    )


def _merged(
    flags: Mapping[str, object], *, given: frozenset[str], log: logging.Logger
) -> dict[str, object]:
    """``flags`` with the ``--config`` file's values under them: a flag named on the
    command line wins over the file."""
    for names in _EXCLUSIVE:
        if set(names) <= given:
            raise errors.ConfigError(f"only one of {' and '.join(names)} may be set")
    merged = dict(flags)
    config = Flags(flags).text("config")
    if config:
        for dest, value in manager_file.load(Path(config), log=log).items():
            if not given & set(manager_file.FLAGS_OF.get(dest, ())):
                merged[dest] = value  # a flag on the command line wins over the file
    return merged


def _checked(read: Flags, *, environ: Mapping[str, str]) -> bool:
    """Refuse the combinations of flags and environment that cannot run; whether the
    runner is sharded (``--sharded``, else ``$SHARDED``)."""
    sharded = (
        read.boolean("sharded")
        if read.get("sharded") is not None
        else _env_bool(environ, "SHARDED", default=False)
    )
    if sharded and read.boolean("leader_elect"):
        # Two ways of deciding who reconciles: one leader, or a share per replica.
        raise errors.ConfigError("--sharded and --leader-elect are mutually exclusive")
    timeout = read.number("reconcile_timeout", sections.DEFAULT_RECONCILE_TIMEOUT)
    if timeout < 0:
        raise errors.ConfigError(f"--reconcile-timeout must not be negative, saw {timeout:g}s")
    if read.boolean("metrics_require_rbac") and not read.boolean("metrics_secure"):
        # A scraper's bearer token must never cross the network in clear text.
        raise errors.ConfigError("--metrics-require-rbac needs --metrics-secure")
    inventory = environ.get("ANSIBLE_INVENTORY", "")
    for source in (s.strip() for s in inventory.split(",")):
        if source and not Path(source).exists():
            raise errors.ConfigError(f"$ANSIBLE_INVENTORY: no such file or directory: {source}")
    return sharded


def _ansible(
    read: Flags,
    *,
    gvks: Iterable[GVK],
    environ: Mapping[str, str],
    roles_path: tuple[str, ...],
    collections_path: tuple[str, ...],
    debug_logs: bool,
) -> sections.AnsibleSettings:
    log_events = read.get("ansible_log_events")
    return sections.AnsibleSettings(
        verbosity=read.whole("ansible_verbosity", _ANSIBLE.verbosity),
        verbosities=verbosities(gvks=gvks, environ=environ),
        args=read.text("ansible_args"),
        roles_path=roles_path,
        collections_path=collections_path,
        log_events=log_events
        if isinstance(log_events, sections.LogEvents)
        else sections.LogEvents.CHANGES
        if read.boolean("zap_devel")
        else sections.LogEvents.TASKS,
        debug_logs=debug_logs,
        runner_dir=Path(read.text("runner_dir", str(sections.DEFAULT_RUNNER_DIR))),
        warm=read.boolean("warm")
        if read.get("warm") is not None
        else _env_bool(environ, WARM_ENV, default=True),
        warm_launcher_max_runs=read.whole(
            "warm_launcher_max_runs", _ANSIBLE.warm_launcher_max_runs
        ),
        warm_launcher_max_rss=read.whole("warm_launcher_max_rss", _ANSIBLE.warm_launcher_max_rss),
        warm_launcher_idle_seconds=_idle_seconds(read, environ=environ),
        artifacts_max_bytes=read.whole(
            "max_runner_artifacts_size", sections.DEFAULT_ARTIFACTS_MAX_BYTES
        ),
    )


def _idle_seconds(read: Flags, *, environ: Mapping[str, str]) -> int:
    """``--warm-launcher-idle-seconds``, else its environment variable, else the default."""
    if read.get("warm_launcher_idle_seconds") is not None:
        name, value = "--warm-launcher-idle-seconds", read.whole("warm_launcher_idle_seconds")
    else:
        name = f"${sections.WARM_LAUNCHER_IDLE_ENV}"
        found = _env_int(environ, sections.WARM_LAUNCHER_IDLE_ENV)
        if found is None:
            return _ANSIBLE.warm_launcher_idle_seconds
        value = found
    if not 0 <= value <= sections.WARM_LAUNCHER_IDLE_MAX:
        raise errors.ConfigError(
            f"{name}: expected a whole number from 0 to {sections.WARM_LAUNCHER_IDLE_MAX}"
            f" (a year), got {value}"
        )
    return value


def _serving(read: Flags) -> sections.ServingSettings:
    return sections.ServingSettings(
        metrics_bind_address=read.text("metrics_bind_address", _SERVING.metrics_bind_address),
        metrics_secure=read.boolean("metrics_secure"),
        metrics_require_rbac=read.boolean("metrics_require_rbac"),
        metrics_cert_dir=read.text("metrics_cert_dir"),
        health_probe_bind_address=read.text(
            "health_probe_bind_address", _SERVING.health_probe_bind_address
        ),
        custom_metrics_bind_address=read.text(
            "custom_metrics_bind_address", _SERVING.custom_metrics_bind_address
        ),
    )


def _webhooks(read: Flags, *, environ: Mapping[str, str]) -> sections.WebhookSettings:
    return sections.WebhookSettings(
        enabled=environ.get("ENABLE_WEBHOOKS", "").strip().lower() != "false",
        port=read.whole("webhook_port", _WEBHOOKS.port),
        host=read.text("webhook_host"),
        cert_dir=Path(read.text("webhook_cert_dir", str(_WEBHOOKS.cert_dir))),
        client_ca=Path(read.text("webhook_client_ca")) if read.text("webhook_client_ca") else None,
        max_concurrent=max(1, read.whole("webhook_max_concurrent", _WEBHOOKS.max_concurrent)),
    )


def _reconcile(
    read: Flags, *, gvks: Iterable[GVK], environ: Mapping[str, str]
) -> sections.ReconcileSettings:
    return sections.ReconcileSettings(
        reconcile_period=read.number("reconcile_period", sections.DEFAULT_RECONCILE_PERIOD),
        reconcile_timeout=read.number("reconcile_timeout", sections.DEFAULT_RECONCILE_TIMEOUT),
        max_concurrent_reconciles=read.whole(
            "max_concurrent_reconciles", _RECONCILE.max_concurrent_reconciles
        ),
        workers=workers(gvks=gvks, environ=environ),
        max_concurrent_runs=max(0, read.whole("max_concurrent_runs")),
        backoff_base=read.number("backoff_base", _RECONCILE.backoff_base),
        backoff_max=read.number("backoff_max", _RECONCILE.backoff_max),
        startup_resync_window=read.number(
            "startup_resync_window", _RECONCILE.startup_resync_window
        ),
        startup_resync_rate=max(
            0.0, read.number("startup_resync_rate", _RECONCILE.startup_resync_rate)
        ),
        inject_owner_ref=read.boolean("inject_owner_ref", True),
        cache_reads=read.boolean("cache_reads", True),
        proxy_port=read.whole("proxy_port"),
        # Named after the operator, as its Lease is (_election).
        field_manager=(
            read.text("leader_election_id")
            or environ.get("OPERATOR_NAME", "")
            or _RECONCILE.field_manager
        ),
    )


def _election(
    read: Flags, *, sharded: bool, environ: Mapping[str, str]
) -> sections.ElectionSettings:
    lease_name = (
        read.text("leader_election_id") or environ.get("OPERATOR_NAME", "") or "playbook-operator"
    )
    return sections.ElectionSettings(
        leader_elect=read.boolean("leader_elect"),
        lease_name=lease_name,
        namespace=read.text("leader_election_namespace"),
        lease_duration=read.number("lease_duration", _ELECTION.lease_duration),
        renew_deadline=read.number("renew_deadline", _ELECTION.renew_deadline),
        retry_period=read.number("retry_period", _ELECTION.retry_period),
        sharded=sharded,
        # This replica's id in sharded mode: --replica-id, $POD_NAME, the host name.
        replica=read.text("replica_id") or environ.get("POD_NAME", "") or socket.gethostname(),
        # The shard group: --shard-group, else the leader Lease's name.
        shard_group=read.text("shard_group") or lease_name,
    )


def workers(*, gvks: Iterable[GVK], environ: Mapping[str, str]) -> dict[GVK, int]:
    """Workers per watch from ``MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>`` (or the
    deprecated ``WORKER_<KIND>_<GROUP>``); a watch without one (or with one <= 0) is absent,
    so ``--max-concurrent-reconciles`` applies to it."""
    found: dict[GVK, int] = {}
    for gvk in gvks:
        suffix = env_suffix(gvk)
        for name in (f"MAX_CONCURRENT_RECONCILES_{suffix}", f"WORKER_{suffix}"):
            number = _env_int(environ, name)
            if number is not None and number > 0:
                found[gvk] = number
                break
    return found


def verbosities(*, gvks: Iterable[GVK], environ: Mapping[str, str]) -> dict[GVK, int]:
    """Ansible verbosity per watch from ``ANSIBLE_VERBOSITY_<KIND>_<GROUP>`` (0-7); a watch
    without one (or out of range) is absent, so ``--ansible-verbosity`` applies to it."""
    found: dict[GVK, int] = {}
    for gvk in gvks:
        number = _env_int(environ, f"ANSIBLE_VERBOSITY_{env_suffix(gvk)}")
        if number is not None and 0 <= number <= 7:
            found[gvk] = number
    return found


def _env_int(environ: Mapping[str, str], name: str) -> int | None:
    """An integer environment variable; unset or empty is None, anything else an error."""
    value = environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise errors.ConfigError(f"${name}: not an integer: {value!r}") from exc


def _env_bool(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    """A boolean environment variable, spelt as the boolean flags are; unset is ``default``."""
    value = environ.get(name, "")
    if not value:
        return default
    lowered = value.lower()
    if lowered in ("1", "t", "true", "yes"):
        return True
    if lowered in ("0", "f", "false", "no"):
        return False
    raise errors.ConfigError(f"${name}: expected true or false, got {value!r}")


def _paths(value: str) -> tuple[str, ...]:
    """A colon-separated search path, empty entries dropped."""
    return tuple(p for p in value.split(":") if p)
