"""The dev loop: notice edits to the project, snapshot them, reconcile again.

Part of ``run --dev`` (:mod:`runner.tools.devloop`); it feeds the queue (watch →
**queue** → reconcile → ansible → status) from the file system instead of the API
server. A thread polls the stamps of the project's content every ``interval``
(no dependency, and editors' atomic renames are seen like any write), waits for a
burst of writes to settle, then:

1. logs each changed file;
2. checks every changed YAML file (:mod:`runner.tools.devloop.syntax`), copies the
   project into a new snapshot and loads watches.yaml from it with the runner's
   full validation — any problem is logged with the file (and line) and the
   current snapshot keeps running, untouched;
3. makes the new snapshot current;
4. a changed watches.yaml is handed to the runner (:meth:`Target.replace_watches`);
   when the runner cannot take it in place (kinds added or removed, event filters
   changed) the loop asks for a restart, which re-runs the same command line;
5. enqueues again the custom resources of the watches whose role or playbook holds
   a changed file — of every watch when the file is shared (another role, vars,
   watches.yaml).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from runner.base import errors
from runner.config import entry, watches
from runner.config.settings import Settings
from runner.kube.types import GVK
from runner.tools.devloop import snapshot as snapshot_mod
from runner.tools.devloop import syntax

log = logging.getLogger("runner.devloop")

POLL_INTERVAL = 0.5  # seconds between scans of the project
SETTLE = 0.3  # a burst of writes is over once a scan this much later sees no change


class Target(Protocol):
    """What the dev loop needs of the runner (the manager implements it)."""

    def requeue(self, gvk: GVK) -> int:
        """Enqueue every custom resource of ``gvk`` again; how many."""
        ...

    def replace_watches(self, loaded: Sequence[entry.Watch]) -> bool:
        """Take an edited watches.yaml; False when only a restart can apply it."""
        ...


def load_watches(path: Path, *, base: Path, settings: Settings) -> list[entry.Watch]:
    """watches.yaml as the runner loads it, relative paths resolved against ``base``."""
    return watches.load(
        path,
        environ=settings.environ,
        roles_path=settings.ansible.roles_path,
        collections_path=settings.ansible.collections_path,
        base_dir=base,
    )


def targets(watch: entry.Watch) -> list[Path]:
    """The role directories and playbook files a watch runs."""
    found: list[Path] = []
    for role, playbook in (
        (watch.role, watch.playbook),
        (watch.finalizer.role, watch.finalizer.playbook) if watch.finalizer else (None, None),
    ):
        if role is not None:
            found.append(role.path)
        if playbook is not None:
            found.append(playbook)
    return found


class DevLoop:
    def __init__(
        self,
        *,
        snapshots: snapshot_mod.Snapshots,
        settings: Settings,
        target: Target,
        stop: threading.Event,
        restart: Callable[[], None],
        interval: float = POLL_INTERVAL,
    ) -> None:
        self._snapshots = snapshots
        self._settings = settings
        self._target = target
        self._stop = stop
        self._restart = restart
        self._interval = interval
        self._watches: list[entry.Watch] = list(settings.watches)
        self._good = snapshots.scan()  # the project as the current snapshot has it
        self._refused: dict[Path, snapshot_mod.Stamp] | None = None  # reported broken

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="devloop", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        log.info(
            "development mode: watching the project for changes",
            extra={"project": str(self._snapshots.source), "snapshot": str(self._snapshots.root)},
        )
        while not self._stop.wait(self._interval):
            try:
                self.poll()
            except Exception:  # the loop must outlive any one bad edit
                log.exception("could not apply a project change")

    def poll(self) -> bool:
        """One scan; True when a change was applied."""
        seen = self._snapshots.scan()
        if seen in (self._good, self._refused):
            return False
        while not self._stop.wait(SETTLE):  # let a burst of writes (a save, a git checkout) end
            again = self._snapshots.scan()
            if again == seen:
                break
            seen = again
        changed = sorted(
            path
            for path in self._good.keys() | seen.keys()
            if self._good.get(path) != seen.get(path)
        )
        if not changed:
            return False
        if self._apply(changed):
            self._good, self._refused = seen, None
            return True
        self._refused = seen
        return False

    # -- one change ---------------------------------------------------------

    def _apply(self, changed: list[Path]) -> bool:
        snaps = self._snapshots
        for path in changed:
            state = "changed" if (snaps.source / path).exists() else "removed"
            log.info(f"project file {state}", extra={"file": str(path)})
        with_watches = snaps.watches_file in changed
        with contextlib.suppress(errors.ConfigError):  # reported below, from the snapshot
            snaps.include(p for w in self._source_watches() for p in targets(w))
        snap = snaps.make()
        problems = [
            problem
            for path in changed
            if (problem := syntax.check(snap / path, shown_as=path)) is not None
        ]
        if not problems:
            try:
                load_watches(snap / snaps.watches_file, base=snap, settings=self._settings)
            except errors.ConfigError as exc:
                text = str(exc).replace(str(snap / snaps.watches_file), str(snaps.watches_file))
                problems.append(
                    syntax.Problem(file=snaps.watches_file, line=None, column=None, problem=text)
                )
        if problems:
            snaps.discard(snap)
            for problem in problems:
                log.error(
                    "edit not applied: the last good version keeps running",
                    extra={
                        "file": str(problem.file),
                        "line": problem.line,
                        "column": problem.column,
                        "error": problem.problem,
                    },
                )
            return False
        snaps.activate(snap)
        loaded = load_watches(snaps.current_watches, base=snaps.current, settings=self._settings)
        if with_watches or loaded != self._watches:
            if not self._target.replace_watches(loaded):
                log.info(
                    "watches.yaml changed what is watched; restarting the runner",
                    extra={"file": str(snaps.watches_file)},
                )
                self._restart()
                return True
            log.info(
                "watches reloaded",
                extra={
                    "file": str(snaps.watches_file),
                    "watches": [str(w.gvk) for w in loaded],
                },
            )
            self._watches = loaded
            self._requeue({w.gvk for w in loaded}, changed)
            return True
        self._requeue(self._affected(changed), changed)
        return True

    def _source_watches(self) -> list[entry.Watch]:
        snaps = self._snapshots
        return load_watches(
            snaps.source / snaps.watches_file, base=snaps.source, settings=self._settings
        )

    def _affected(self, changed: Iterable[Path]) -> set[GVK]:
        """Watches whose role or playbook holds a changed file; all for a shared file."""
        snaps = self._snapshots
        everything = {w.gvk for w in self._watches}
        affected: set[GVK] = set()
        for path in changed:
            file = snaps.source / path
            owners = {
                w.gvk
                for w in self._watches
                for target in targets(w)
                if file == (origin := snaps.source_of(target)) or file.is_relative_to(origin)
            }
            if not owners:
                return everything
            affected |= owners
        return affected

    def _requeue(self, kinds: set[GVK], changed: list[Path]) -> None:
        for gvk in sorted(kinds, key=str):
            count = self._target.requeue(gvk)
            log.info(
                "reconciling again after a change",
                extra={"kind": gvk.kind, "objects": count, "files": [str(p) for p in changed]},
            )
