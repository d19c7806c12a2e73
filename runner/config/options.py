"""The one settings object, built once at start-up from flags and environment.

Defaults live here and only here (they follow operator-sdk's ``ansible-operator
run``). The object is passed explicitly to whoever needs it; there are no
module-level globals. watches.yaml is parsed by :mod:`runner.config.watches` and kept
on the settings so every stage sees the same, validated configuration.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import yaml

from runner.base import errors, logs
from runner.config import watches
from runner.kube.types import GVK

#: Environment variable that turns warm execution off (``false``) unless the flag is given.
WARM_ENV = "PLAYBOOK_OPERATOR_WARM"
DEFAULT_RECONCILE_PERIOD = 10 * 3600.0  # operator-sdk PR #5781: 10h
#: --reconcile-timeout: generous, so only a run that hangs (a wait on something that
#: never comes) is killed; a watch's ``reconcileTimeout`` overrides it; 0 disables.
DEFAULT_RECONCILE_TIMEOUT = 3600.0
VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"
RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"
#: "true" pauses reconciling one CR (runner.reconcile.pause); deletion still runs.
PAUSED_ANNOTATION = "playbook-operator.io/paused"
#: ansible-operator's runner directory: private data dirs and artifacts of every run.
DEFAULT_RUNNER_DIR = Path("/tmp/ansible-operator/runner")
_RUNNER_DIR_LOCK = ".playbook-operator.lock"


class LogEvents(Enum):
    """How much of each Ansible run is logged (operator-sdk's ``--ansible-log-events``)."""

    TASKS = "Tasks"
    EVERYTHING = "Everything"
    NOTHING = "Nothing"
    # Ours: a run in a few lines — tasks that changed something, failures, debug output,
    # warnings; no task starts. ``--zap-devel``'s default (``make run``).
    CHANGES = "Changes"


@dataclass(frozen=True)
class Settings:
    watches_file: Path
    watches: tuple[watches.Watch, ...] = ()
    kubeconfig: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    reconcile_period: float = DEFAULT_RECONCILE_PERIOD
    reconcile_timeout: float = DEFAULT_RECONCILE_TIMEOUT  # seconds per run; 0: no limit
    # A lambda: default_workers is defined below the class.
    max_concurrent_reconciles: int = field(default_factory=lambda: default_workers())  # noqa: PLW0108
    ansible_verbosity: int = 2
    ansible_args: str = ""
    ansible_roles_path: tuple[str, ...] = ()
    ansible_collections_path: tuple[str, ...] = ()
    ansible_log_events: LogEvents = LogEvents.TASKS
    inject_owner_ref: bool = True
    cache_reads: bool = True  # serve roles' GETs of watched kinds from informer caches
    warm: bool = True  # start ansible-playbook and modules from warm launchers (runner.warm)
    warm_launcher_max_runs: int = 1000  # replace a launcher after this many runs; 0: never
    warm_launcher_max_rss: int = 512  # MiB; replace a launcher above this RSS; 0: no cap
    proxy_port: int = 0  # any free port; each run's kubeconfig names it
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
    sharded: bool = False  # active-active replicas, each reconciling its share (sharding)
    replica_id: str = ""  # sharded: this replica's name; empty: $POD_NAME, else the host name
    shard_group: str = ""  # sharded: prefix and label of the replicas' Leases
    graceful_shutdown_timeout: float = 30.0
    runner_dir: Path = DEFAULT_RUNNER_DIR
    log_format: logs.LogFormat = logs.LogFormat.JSON
    log_level: int = logging.INFO  # a logging level; below DEBUG: zap's integer levels > 1
    log_time_encoding: logs.TimeEncoding = logs.TimeEncoding.ISO8601
    log_stacktrace_level: int | None = None  # records at or above it carry a stack trace
    ansible_debug_logs: bool = False  # ANSIBLE_DEBUG_LOGS: print each run's whole output
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    dev: bool = False  # run --dev: runs read a snapshot; edits reconcile again (tools.devloop)
    # After a restart, CRs that succeeded and whose children did not change run spread
    # over this window (runner.reconcile.startup); 0: all at once, as upstream.
    startup_resync_window: float = 300.0
    startup_resync_rate: float = 5.0  # spread runs started per second at most; 0: no cap
    max_concurrent_runs: int = 0  # Ansible runs at once across every kind; 0: no cap
    # Admission webhooks (runner.webhook), served only when a watch has validation/mutation.
    webhook_port: int = 9443
    webhook_host: str = ""  # every interface, as controller-runtime's webhook server
    # ENABLE_WEBHOOKS=false (kubebuilder's switch): watches' webhooks are not served.
    enable_webhooks: bool = True
    webhook_cert_dir: Path = Path("/tmp/k8s-webhook-server/serving-certs")  # tls.crt, tls.key
    webhook_max_concurrent: int = 4  # webhook runs at once, beside the reconciles' workers
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def __post_init__(self) -> None:
        # Every per-watch environment override is read now, so a bad one stops the runner at
        # start-up (naming the variable) instead of failing a reconcile after Running was
        # written. The reads are pure: later calls return the same values.
        for watch in self.watches:
            self.workers_for(watch.gvk)
            self.verbosity_for(watch.gvk)

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

    def shard_replica(self) -> str:
        """This replica's id in sharded mode: ``--replica-id``, ``$POD_NAME``, the host name."""
        return self.replica_id or self.environ.get("POD_NAME", "") or socket.gethostname()

    def shard_group_name(self) -> str:
        """The shard group: ``--shard-group``, else the leader Lease's name."""
        return self.shard_group or self.leader_lease_name()


def default_workers(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """``--max-concurrent-reconciles``' default: the container's CPU quota rounded up
    (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``), at
    least 1; without a quota, the CPUs this process may run on (Go's runtime.NumCPU,
    operator-sdk's default). A 500m pod on a 64-core node gets 1 worker, not 64."""
    quota = _cpu_quota(cgroup)
    if quota is not None:
        return max(1, -(-quota[0] // quota[1]))  # ceiling division
    return len(os.sched_getaffinity(0)) or 1


def _cpu_quota(cgroup: Path) -> tuple[int, int] | None:
    """(quota, period) in microseconds, or None when unlimited or unreadable."""
    candidates = [(cgroup / "cpu.max", None)] + [
        (cgroup / d / "cpu.cfs_quota_us", cgroup / d / "cpu.cfs_period_us")
        for d in ("cpu", "cpu,cpuacct")
    ]
    for first, second in candidates:
        try:
            words = first.read_text().split()
            if second is not None:
                words += second.read_text().split()
            quota, period = int(words[0]), int(words[1])
        except (OSError, ValueError, IndexError):
            continue  # absent, or "max": no quota in this file
        return (quota, period) if quota > 0 and period > 0 else None
    return None


def env_suffix(gvk: GVK) -> str:
    """``<KIND>_<GROUP>`` upper-cased with ``.`` and ``-`` as ``_``, operator-sdk's convention."""
    return f"{gvk.kind}_{gvk.group}".upper().replace(".", "_").replace("-", "_")


def parse_namespaces(value: str) -> tuple[str, ...]:
    """WATCH_NAMESPACE: empty means all namespaces; a comma list means several."""
    return tuple(sorted({part.strip() for part in value.split(",") if part.strip()}))


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


def manager_config(path: Path, *, log: logging.Logger) -> dict[str, object]:
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
            return watches.parse_duration(str(value))
        except ValueError as exc:
            raise errors.ConfigError(f"--config={path}: {field_name}: {exc}") from exc
    if name == "leader_elect":
        if not isinstance(value, bool):
            raise errors.ConfigError(f"--config={path}: {field_name}: expected true or false")
        return value
    if not isinstance(value, str):
        raise errors.ConfigError(f"--config={path}: {field_name}: expected a string")
    return value


def parse_bool(value: str) -> bool | None:
    """Go's ``strconv.ParseBool`` (how ansible-operator reads ``ANSIBLE_DEBUG_LOGS``);
    None when ``value`` is none of its spellings."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


@contextlib.contextmanager
def claim_runner_dir(wanted: Path) -> Iterator[Path]:
    """The runner directory this process uses, held for as long as the context is open.

    ``wanted`` is taken with an exclusive ``flock`` on a lock file inside it. Another
    live runner process already holding it (same ``--runner-dir``, e.g. the default
    one) would otherwise share private data dirs with this one and overwrite its
    extra vars and artifacts mid-run; this process then gets its own directory,
    ``<wanted>-<pid>``, beside it. The kernel drops the lock when the process ends,
    however it ends, so a crashed runner never blocks the next one.

    Each directory is made private first (:func:`_make_private`): refused when
    another local user could have planted Ansible inputs in it.
    """
    for candidate in (wanted, wanted.with_name(f"{wanted.name}-{os.getpid()}")):
        try:
            _make_private(candidate, wanted=wanted)
            fd = os.open(
                candidate / _RUNNER_DIR_LOCK,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
        except OSError as exc:
            raise errors.ConfigError(f"--runner-dir={wanted}: cannot use it: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield candidate
        finally:
            os.close(fd)  # releases the lock
        return
    raise errors.ConfigError(f"--runner-dir={wanted}: no free runner directory")  # unreachable


def _make_private(path: Path, *, wanted: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700, or refuse it when another
    local user could have put something in it.

    ansible-runner reads inputs from a private data dir (``args``, ``env/cmdline``,
    ``env/envvars``, ``project/ansible.cfg``, ``inventory/``...), so whoever can write
    there runs code as this process. The default, ``/tmp/ansible-operator/runner``, is
    a path anyone on the host can create first. Refused: the runner dir not owned by
    this uid or not mode 0700; below a world-writable directory, any component that is
    a symbolic link, neither this uid's nor root's, or writable by others without the
    sticky bit (a /tmp-like directory inside is fine). A container's emptyDir
    ``/tmp`` and ``make run`` create the default path themselves, so it passes.
    """
    path = Path(os.path.abspath(path))
    uid = os.geteuid()
    current = Path(path.anchor)
    exposed = False  # below a directory every local user may write to, as /tmp
    for part in path.parts[1:]:
        exposed = exposed or bool(os.stat(current).st_mode & stat.S_IWOTH)
        current = current / part
        leaf = current == path
        created = False
        with contextlib.suppress(FileExistsError):
            os.mkdir(current, 0o700)
            created = True
        if not (exposed or leaf):
            continue
        try:
            fd = os.open(current, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            problem = "is a symbolic link" if current.is_symlink() else f"cannot be used: {exc}"
            raise _unsafe(wanted, current, problem) from exc
        try:
            if created:
                os.fchmod(fd, 0o700)  # whatever the umask
            info = os.fstat(fd)
        finally:
            os.close(fd)
        mode = stat.S_IMODE(info.st_mode)
        if info.st_uid != uid and (leaf or info.st_uid != 0):
            raise _unsafe(wanted, current, f"is owned by uid {info.st_uid}, not by this uid {uid}")
        if leaf and mode != 0o700:
            raise _unsafe(wanted, current, f"has mode {mode:04o}, not 0700 (chmod 700 it)")
        if not leaf and mode & 0o022 and not mode & stat.S_ISVTX:
            # A sticky one (another /tmp) is fine: others cannot move what is in it.
            raise _unsafe(wanted, current, f"is writable by other users (mode {mode:04o})")


def _unsafe(wanted: Path, path: Path, problem: str) -> errors.ConfigError:
    return errors.ConfigError(
        f"--runner-dir={wanted}: {path} {problem}; another local user could plant "
        "Ansible inputs there and run code as this process, so it is not used"
    )
