"""Killing a run's whole process tree, wherever its processes moved.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote`. Killing a run's
process group is not enough: ansible-playbook's workers call ``setsid()`` and
so leave it, and a worker killed with its parent's group left alive keeps
running its task (a ``sleep`` of an hour, a module blocked on a dead proxy).
:func:`kill_tree` stops every descendant first — a stopped process cannot
fork or exit, so the tree holds still while it is read from ``/proc`` — and
then kills them all. Launchers are child subreapers (:func:`become_subreaper`):
a process orphaned inside a run is reparented to the launcher, not to init, so
it is still found, killed and reaped there.

:func:`marked` finds the roots of a cold run, which no launcher watches, for
:func:`kill_tree` (:mod:`runner.ansible.deadline` does so): the processes whose
environment carries the run's mark (every process of a run inherits it), so a
process that left the tree is found too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterable

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def become_subreaper() -> None:
    """Orphans of this process's descendants become this process's children."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """SIGKILL this process when the process that forked it dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def children_map() -> dict[int, list[int]]:
    """Parent pid → child pids, for every process visible in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        # Bytes, no codec: this runs in a launcher while SIGCHLDs arrive, and on Python
        # 3.13.0 a first codec lookup there failed with "SystemError: error return without
        # exception set", killing the launcher.
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(root: int | Iterable[int]) -> set[int]:
    """``root`` (one pid or several) and every process below it."""
    children = children_map()
    found: set[int] = set()
    stack = [root] if isinstance(root, int) else list(root)
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


def marked(entry: str) -> set[int]:
    """Processes (other than this one) whose initial environment holds ``entry``
    (``NAME=value``) — as exec'd; a fork shows its parent's."""
    wanted = entry.encode()
    found: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.add(int(name))
    return found


def kill_tree(root: int | Iterable[int]) -> None:
    """SIGKILL ``root`` (one pid or several) and all its descendants, including those
    in other sessions."""
    roots = {root} if isinstance(root, int) else set(root)
    stopped: set[int] = set()
    while True:
        fresh = descendants(roots) - stopped
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= fresh
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_children() -> None:
    """Kill the trees of all of this process's children (its jobs and adopted orphans)."""
    for child in children_map().get(os.getpid(), []):
        kill_tree(child)
