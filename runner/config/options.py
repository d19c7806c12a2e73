"""The one settings object, built once at start-up from flags, environment, ``--config``
and watches.yaml (:mod:`runner.config.builder`).

:class:`Settings` holds what the whole process shares (watches, namespaces, the
kubeconfig, the shutdown grace) and one section per stage (:mod:`runner.config.sections`,
where the defaults live, following operator-sdk's ``ansible-operator run``). The object
is passed explicitly to whoever needs it, each stage taking only its section; there are
no module-level globals. watches.yaml is parsed by :mod:`runner.config.watches` and kept
on the settings so every stage sees the same, validated configuration.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.base import errors
from runner.config import entry, sections
from runner.kube.types import GVK

#: Environment variable that turns warm execution off (``false``) unless the flag is given.
WARM_ENV = "PLAYBOOK_OPERATOR_WARM"
VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"
RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"
#: "true" pauses reconciling one CR (runner.reconcile.pause); deletion still runs.
PAUSED_ANNOTATION = "playbook-operator.io/paused"
_RUNNER_DIR_LOCK = ".playbook-operator.lock"


@dataclass(frozen=True)
class Settings:
    """What the whole process shares, and one section per stage that reads the rest."""

    watches_file: Path
    watches: tuple[entry.Watch, ...] = ()
    kubeconfig: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    graceful_shutdown_timeout: float = 30.0
    dev: bool = False  # run --dev: runs read a snapshot; edits reconcile again (tools.devloop)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    ansible: sections.AnsibleSettings = field(default_factory=sections.AnsibleSettings)
    reconcile: sections.ReconcileSettings = field(default_factory=sections.ReconcileSettings)
    election: sections.ElectionSettings = field(default_factory=sections.ElectionSettings)
    serving: sections.ServingSettings = field(default_factory=sections.ServingSettings)
    webhooks: sections.WebhookSettings = field(default_factory=sections.WebhookSettings)
    logging: sections.LogSettings = field(default_factory=sections.LogSettings)


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
