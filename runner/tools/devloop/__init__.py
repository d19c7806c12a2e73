"""``playbook-operator run --dev``: edit a role, see it on the cluster.

Development mode around the runtime (watch → queue → reconcile → ansible →
status): runs read the project's Ansible content from a private snapshot
(:mod:`~runner.tools.devloop.snapshot`), and a polling loop (:mod:`~runner.tools.devloop.loop`)
turns each good edit of roles, playbooks, vars files or watches.yaml into a new
snapshot and new reconciles of the affected custom resources. A YAML file that no
longer parses (:mod:`~runner.tools.devloop.syntax`), or a watches.yaml the runner
refuses, is logged with file and line and changes nothing.

The runtime is reached through two hooks of the manager
(:class:`~runner.tools.devloop.loop.Target`): enqueue a watch's custom resources again,
and take edited watches. Imports nothing above the settings but what it is given.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from runner.config.settings import Settings
from runner.tools.devloop.loop import DevLoop, Target, load_watches, targets
from runner.tools.devloop.snapshot import Snapshots

__all__ = ["prepare", "run"]

log = logging.getLogger("runner.devloop")

#: Where snapshots live, inside the runner directory this process holds.
SNAPSHOT_DIR = "dev-snapshot"


class Runtime(Target, Protocol):
    """A manager: the dev loop's hooks, its stop event, and ``run``."""

    stop_event: threading.Event

    def run(self) -> int: ...


def prepare(settings: Settings) -> tuple[Settings, Snapshots]:
    """Snapshot the project (the working directory) and settings whose watches run it."""
    snaps = Snapshots(
        source=Path.cwd(),
        root=settings.ansible.runner_dir / SNAPSHOT_DIR,
        watches_file=settings.watches_file,
    )
    snaps.include(p for w in settings.watches for p in targets(w))
    snaps.activate(snaps.make())
    # A roles path into the project (make run's ANSIBLE_ROLES_PATH=$PWD/roles) is read
    # through the snapshot too, or roles found on it would run from the project itself.
    ansible = settings.ansible
    roles_path = tuple(snaps.through_current(p) for p in ansible.roles_path)
    settings = dataclasses.replace(
        settings, ansible=dataclasses.replace(ansible, roles_path=roles_path)
    )
    loaded = load_watches(snaps.current_watches, base=snaps.current, settings=settings)
    return dataclasses.replace(settings, watches=tuple(loaded)), snaps


def run(
    *,
    settings: Settings,
    runtime: Callable[[Settings], Runtime],
    argv: Sequence[str],
) -> int:
    """Run the runtime on a snapshot with the dev loop beside it.

    When an edit of watches.yaml needs a restart, the process runs ``argv`` again
    (``python -P -m runner``) in place once the runtime has shut down gracefully: the
    runner directory's lock, listeners and launchers' lifelines are not inherited.
    """
    settings, snaps = prepare(settings)
    manager = runtime(settings)
    restart = threading.Event()

    def restart_runner() -> None:
        restart.set()
        manager.stop_event.set()

    DevLoop(
        snapshots=snaps,
        settings=settings,
        target=manager,
        stop=manager.stop_event,
        restart=restart_runner,
    ).start()
    code = manager.run()
    if restart.is_set():
        sys.stdout.flush()
        sys.stderr.flush()
        # -P: the working directory (a project may hold a "runner" directory) is not
        # put before the installed package on the module path.
        os.execv(sys.executable, [sys.executable, "-P", "-m", "runner", *argv])
    return code
