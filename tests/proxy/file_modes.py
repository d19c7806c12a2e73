"""Every mode a file is seen with while code writes it: proof that a credential file is
private from its creation, not narrowed by a chmod after it was written.

:func:`watched` sets the umask to 0 (so a file created without an explicit mode is
world-readable) and, through a Python audit hook, looks at every file and directory
created under a root at each audit event the code raises while it runs — every
``open``, ``mkdir``, ``chmod``, ``unlink``... — and notes every chmod of one of them
(with the mode it had just before). Used by the proxy's kubeconfig test and the
metrics TLS key test.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_WATCHERS: list[Callable[[str, tuple[Any, ...]], None]] = []
_HOOKED: list[bool] = []  # audit hooks cannot be removed: added once per process
_CREATING = ("open", "os.mkdir")


@dataclass
class Modes:
    """What was seen under ``root``: every mode of each path, and each chmod of one."""

    root: str
    seen: dict[str, set[int]] = field(default_factory=dict)
    chmods: list[tuple[str, int]] = field(default_factory=list)  # (path, mode before)
    _busy: bool = False

    def of(self, name: str) -> dict[str, set[int]]:
        """The modes seen of paths named ``name`` (any directory under the root)."""
        return {path: modes for path, modes in self.seen.items() if Path(path).name == name}

    def see(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            path = _path(args[0]) if args else None
            if path is not None and (path + os.sep).startswith(self.root + os.sep):
                if event in _CREATING and path not in self.seen:
                    self.seen[path] = set()
                if event == "os.chmod":
                    self.chmods.append((path, _mode(path) or 0))
            for known, modes in self.seen.items():
                mode = _mode(known)
                if mode is not None:
                    modes.add(mode)
        finally:
            self._busy = False


@contextlib.contextmanager
def watched(root: Path) -> Iterator[Modes]:
    """Under umask 0, what happens to the files and directories created below ``root``."""
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED.append(True)
    modes = Modes(root=os.path.realpath(root))
    umask = os.umask(0)
    _WATCHERS.append(modes.see)
    try:
        yield modes
    finally:
        _WATCHERS.remove(modes.see)
        os.umask(umask)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    for watcher in tuple(_WATCHERS):
        watcher(event, args)


def _path(subject: object) -> str | None:
    """The absolute path an audit event names: a path, or a descriptor's file."""
    if isinstance(subject, int):
        try:
            return os.readlink(f"/proc/self/fd/{subject}")
        except OSError:
            return None
    if isinstance(subject, str | bytes | os.PathLike):
        return os.path.abspath(os.fsdecode(subject))
    return None


def _mode(path: str) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None
