"""The dev snapshot: the copy of the project's Ansible content that runs read.

Part of ``run --dev`` (:mod:`runner.tools.devloop`), before the whole flow: watches.yaml
and the roles and playbooks it names are read from here, not from the project, so
an edit in progress or a broken one never reaches a run. Each good state of the
project is copied into a new ``snap-<n>`` directory and ``current`` (a symlink,
replaced atomically) is pointed at it; watches are loaded with ``current`` as
their base, so the paths runs use never change and only what they point at does.
A few older snapshots are kept for runs that started before a swap.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

#: What a project's Ansible content is, beside watches.yaml and what it names
#: (operator-sdk's layout: roles, playbooks, and the vars Ansible reads beside them).
CONTENT = (
    "roles",
    "playbooks",
    "vars",
    "group_vars",
    "host_vars",
    "library",
    "module_utils",
    "filter_plugins",
)
_KEEP = 3  # snapshots kept: the current one and two a run may still be reading
_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".molecule", ".cache"})

#: A file's identity for change detection: (modification time in ns, size).
Stamp = tuple[int, int]


class Snapshots:
    """Snapshots of ``source`` (the project directory) under ``root``."""

    def __init__(self, *, source: Path, root: Path, watches_file: Path) -> None:
        self.source = source.absolute()
        self.root = root.absolute()
        self.watches_file = _relative(watches_file.absolute(), self.source)
        self._watches_origin = watches_file.absolute()
        self.extra: set[Path] = set()  # content watches.yaml names outside CONTENT
        self.current = self.root / "current"
        self._number = 0
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    @property
    def current_watches(self) -> Path:
        """watches.yaml as runs see it (through ``current``)."""
        return self.current / self.watches_file

    def entries(self) -> list[Path]:
        """The project's top-level entries that make up its content (relative paths)."""
        wanted = {self.watches_file, *self.extra}
        wanted.update(Path(name) for name in CONTENT if (self.source / name).exists())
        return sorted(wanted)

    def include(self, paths: Iterable[Path]) -> None:
        """Also copy these (roles or playbooks watches.yaml names outside ``CONTENT``)."""
        for path in paths:
            absolute = path.absolute()
            if absolute.is_relative_to(self.source) and absolute != self.source:
                top = Path(absolute.relative_to(self.source).parts[0])
                if str(top) not in CONTENT:
                    self.extra.add(top)

    def scan(self) -> dict[Path, Stamp]:
        """Every file of the content with its stamp, by path relative to the project."""
        found: dict[Path, Stamp] = {}
        for entry in self.entries():
            origin = self._origin(entry)
            for path in _files(origin):
                try:
                    info = path.stat()
                except OSError:
                    continue  # removed while scanning: the next scan sees it gone
                found[entry / path.relative_to(origin)] = (info.st_mtime_ns, info.st_size)
        return found

    def _origin(self, entry: Path) -> Path:
        return self._watches_origin if entry == self.watches_file else self.source / entry

    def make(self) -> Path:
        """Copy the content into a new snapshot directory (not yet current)."""
        self._number += 1
        snap = self.root / f"snap-{self._number}"
        shutil.rmtree(snap, ignore_errors=True)
        snap.mkdir(mode=0o700)
        for entry in self.entries():
            origin, copy = self._origin(entry), snap / entry
            copy.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(
                    origin, copy, symlinks=True, ignore=shutil.ignore_patterns(*_SKIPPED_DIRS)
                )
            elif origin.exists():
                shutil.copy2(origin, copy)
        return snap

    def activate(self, snap: Path) -> None:
        """Point ``current`` at ``snap`` (atomically) and drop the oldest snapshots."""
        link = self.root / f".current-{snap.name}"
        link.unlink(missing_ok=True)
        link.symlink_to(snap.name)
        os.replace(link, self.current)
        snaps = sorted(
            (p for p in self.root.glob("snap-*") if p.is_dir()),
            key=lambda p: int(p.name.partition("-")[2]),
        )
        for old in snaps[:-_KEEP]:
            shutil.rmtree(old, ignore_errors=True)

    def discard(self, snap: Path) -> None:
        shutil.rmtree(snap, ignore_errors=True)

    def through_current(self, entry: str) -> str:
        """A search path entry into the project, as the same place in ``current``."""
        path = Path(entry).expanduser()
        if path.is_absolute() and path.is_relative_to(self.source):
            return str(self.current / path.relative_to(self.source))
        return entry

    def source_of(self, path: Path) -> Path:
        """The project file a path under ``current`` (or a snapshot) is the copy of."""
        for base in (self.current, *self.root.glob("snap-*")):
            if path.is_relative_to(base):
                return self.source / path.relative_to(base)
        return path


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for directory, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            yield Path(directory) / name


def _relative(path: Path, base: Path) -> Path:
    return path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
