"""The ``--config`` file: controller-runtime's ControllerManagerConfig, as ansible-operator
reads it.

A deployment made by operator-sdk's scaffold may pass ``--config`` with a manager file
(health and metrics addresses, leader election, the shutdown grace, the cache namespace).
:func:`load` turns one into values by flag destination; :mod:`runner.config.builder` lays
them under the flags (a flag given on the command line wins, see :data:`FLAGS_OF`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import yaml

from runner.base import errors
from runner.config import durations

#: A ControllerManagerConfig key path → the setting it gives (controller-runtime v1alpha1).
_MANAGER_CONFIG = {
    ("health", "healthProbeBindAddress"): "health_probe_bind_address",
    ("metrics", "bindAddress"): "metrics_bind_address",
    ("leaderElection", "leaderElect"): "leader_elect",
    ("leaderElection", "resourceName"): "leader_election_id",
    ("leaderElection", "resourceNamespace"): "leader_election_namespace",
    ("leaderElection", "leaseDuration"): "lease_duration",
    ("leaderElection", "renewDeadline"): "renew_deadline",
    ("leaderElection", "retryPeriod"): "retry_period",
    ("gracefulShutDown", "timeout"): "graceful_shutdown_timeout",
    ("cacheNamespace",): "cache_namespace",
}
_DURATIONS = frozenset(
    {"lease_duration", "renew_deadline", "retry_period", "graceful_shutdown_timeout"}
)
#: Known keys that change nothing here: the lock is always a Lease; informers never resync.
_MANAGER_CONFIG_IGNORED = frozenset(
    {("apiVersion",), ("kind",), ("leaderElection", "resourceLock"), ("syncPeriod",)}
)


def load(path: Path, *, log: logging.Logger) -> dict[str, object]:
    """The settings a ``--config`` file (controller-runtime's ControllerManagerConfig, as
    ansible-operator reads it) gives, by setting name. Webhook options stop the runner,
    as they stop ansible-operator; other keys are reported and ignored."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise errors.ConfigError(f"--config={path}: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise errors.ConfigError(f"--config={path}: expected a mapping")
    found: dict[str, object] = {}
    ignored: list[str] = []

    def walk(node: Mapping[str, object], prefix: tuple[str, ...]) -> None:
        for key, value in node.items():
            where = (*prefix, str(key))
            if where[0] == "webhook" and value not in (None, {}, "", 0):
                raise errors.ConfigError(
                    f"--config={path}: webhook options are not supported (ansible-operator "
                    f"refuses them too): {'.'.join(where)}"
                )
            name = _MANAGER_CONFIG.get(where)
            if name is not None:
                found[name] = _config_value(path, where, name, value)
            elif isinstance(value, Mapping) and where[0] != "webhook":
                walk(value, where)
            elif where not in _MANAGER_CONFIG_IGNORED and where[0] != "webhook":
                ignored.append(".".join(where))

    walk(loaded, ())
    if ignored:
        log.warning("manager config keys ignored", extra={"config": str(path), "keys": ignored})
    return found


def _config_value(path: Path, where: tuple[str, ...], name: str, value: object) -> object:
    field_name = ".".join(where)
    if name in _DURATIONS:
        try:
            return durations.parse(str(value))
        except ValueError as exc:
            raise errors.ConfigError(f"--config={path}: {field_name}: {exc}") from exc
    if name == "leader_elect":
        if not isinstance(value, bool):
            raise errors.ConfigError(f"--config={path}: {field_name}: expected true or false")
        return value
    if not isinstance(value, str):
        raise errors.ConfigError(f"--config={path}: {field_name}: expected a string")
    return value


#: The flags behind each value a ``--config`` file can hold: given on the command line,
#: they win over the file.
FLAGS_OF = {
    "health_probe_bind_address": ("--health-probe-bind-address",),
    "metrics_bind_address": ("--metrics-bind-address", "--metrics-addr"),
    "leader_elect": ("--leader-elect", "--enable-leader-election"),
    "leader_election_id": ("--leader-election-id",),
    "leader_election_namespace": ("--leader-election-namespace",),
    "lease_duration": ("--leader-elect-lease-duration", "--lease-duration"),
    "renew_deadline": ("--leader-elect-renew-deadline", "--renew-deadline"),
    "graceful_shutdown_timeout": ("--graceful-shutdown-timeout",),
}
