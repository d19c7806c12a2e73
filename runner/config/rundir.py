"""The runner directory: claimed by one runner process at a time, private to it.

Private data dirs, artifacts and extra vars live under ``--runner-dir``; two runner
processes sharing one would overwrite each other's inputs mid-run, and a directory
another local user could write to would let them plant Ansible inputs. The ``run``
command claims it (:func:`claim_runner_dir`) before anything runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from runner.base import errors

_RUNNER_DIR_LOCK = ".playbook-operator.lock"


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
