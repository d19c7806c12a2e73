"""What a run's result depended on besides its CR and its children, as digests.

Flow: watch → **queue** → reconcile. The start-up spread (:mod:`runner.reconcile.startup`)
defers a CR's first run after a restart only on positive evidence that nothing the last
successful run depended on has changed. Its CR and children are checked there; this
module digests the rest, each part on its own so that a log can say which one moved:

- ``content``: every file under the role's directory (a role watch) or under the
  playbook's directory (a playbook watch), by relative path and bytes. Bounded: more
  than :data:`MAX_FILES` files or :data:`MAX_BYTES` bytes, or an unreadable one, gives
  no digest (then no CR of the watch is ever deferred). Not seen: roles and collections
  found elsewhere (``roles_path``, installed collections), which an image change covers
  through ``runtime`` only if it also changes the runtime or ansible-core.
- ``watch``: the watches.yaml entry with its defaults filled in
  (:class:`runner.config.entry.Watch`), its ``vars`` and its finalizer's included.
- ``runtime``: this runtime's version, ansible-core's and Python's, and a digest of the
  installed ``runner`` package's files. That is what stands for "the image": a new image
  ships another runtime or another Ansible, and a rebuilt one with edited runtime files
  changes the package digest; an image that changes only system packages is not seen.

Imports: the configuration's watch entry only.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import importlib.metadata
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import runner
from runner.config import entry

#: More files than this under a role's or playbook's directory: no digest, no deferral.
MAX_FILES = 2000
#: More bytes than this in those files together: no digest, no deferral.
MAX_BYTES = 64 * 1024 * 1024
#: Directories that are never the role's content (version control, byte code).
_SKIPPED = frozenset({".git", "__pycache__"})

Parts = dict[str, str]


class Inputs:
    """The current digests of one watch's inputs (:meth:`current`).

    ``watch`` is read on every call, since a reloaded watches.yaml may replace the entry.
    A file's digest is kept while its size, mtime, ctime and inode stay the same, so
    that each run's check costs a directory walk and a ``stat`` per file, not a read.
    """

    def __init__(
        self,
        watch: Callable[[], entry.Watch],
        *,
        runtime: Callable[[], str | None] | None = None,
    ) -> None:
        self._watch = watch
        self._runtime = runtime or runtime_digest
        self._lock = threading.Lock()
        self._files: dict[str, tuple[tuple[int, int, int, int], str]] = {}

    def current(self) -> Parts | None:
        """Every part's digest now; None when any part cannot be digested."""
        watch = self._watch()
        runtime = self._runtime()
        content = self._content(watch)
        if runtime is None or content is None:
            return None
        return {"content": content, "watch": watch_digest(watch), "runtime": runtime}

    def _content(self, watch: entry.Watch) -> str | None:
        if watch.role is not None:
            root = watch.role.path
        elif watch.playbook is not None:
            root = watch.playbook.parent
        else:
            return None
        with self._lock:
            return self._tree(Path(root))

    def _tree(self, root: Path) -> str | None:
        total = hashlib.sha256()
        files = 0
        size = 0
        kept: dict[str, tuple[tuple[int, int, int, int], str]] = {}
        try:
            for directory, subdirs, names in os.walk(root, onerror=_raise):
                subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED)
                for name in sorted(names):
                    path = os.path.join(directory, name)
                    stat = os.stat(path)
                    files += 1
                    size += stat.st_size
                    if files > MAX_FILES or size > MAX_BYTES:
                        return None
                    key = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
                    known = self._files.get(path)
                    digest = known[1] if known and known[0] == key else _file_digest(path)
                    kept[path] = (key, digest)
                    total.update(f"{os.path.relpath(path, root)}\0{digest}\n".encode())
        except OSError:
            return None
        if not files:
            return None  # a role with no files is not one Ansible ran
        self._files = kept
        return "sha256:" + total.hexdigest()


def watch_digest(watch: entry.Watch) -> str:
    """The watches.yaml entry's settings, vars and finalizer included."""
    text = json.dumps(_canonical(watch), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def runtime_digest() -> str | None:
    """The runtime's and Ansible's versions and the runner package's files (once per
    process: they do not change under a running process that matters). None: Ansible
    is not installed where this process can see its version."""
    try:
        ansible = importlib.metadata.version("ansible-core")
    except importlib.metadata.PackageNotFoundError:
        return None
    package = Path(runner.__file__).parent
    total = hashlib.sha256(f"{runner.__version__}\0{ansible}\0{sys.version}\n".encode())
    try:
        for directory, subdirs, names in os.walk(package, onerror=_raise):
            subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED)
            for name in sorted(names):
                path = os.path.join(directory, name)
                total.update(f"{os.path.relpath(path, package)}\0{_file_digest(path)}\n".encode())
    except OSError:
        return None
    return "sha256:" + total.hexdigest()


def changed(recorded: object, now: Mapping[str, str] | None) -> list[str]:
    """The parts that differ between a record and now (every part when either is missing)."""
    if now is None or not isinstance(recorded, dict):
        return ["content", "watch", "runtime"] if now is None else sorted(now)
    return sorted(part for part in set(now) | set(recorded) if recorded.get(part) != now.get(part))


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _raise(error: OSError) -> None:
    raise error


def _canonical(value: Any) -> Any:
    """``value`` as JSON that is the same in every process (sets sorted, paths as text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
