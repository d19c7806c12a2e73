"""How the runner process ends: one path, and one function that decides the exit code.

Two ways out, as ansible-operator's manager has them:

- a stop (SIGTERM/SIGINT, or the dev loop asking for a restart): the manager stops its
  runnable groups in reverse order (:mod:`runner.operations.runnables`) and returns
  :func:`exit_code` of :attr:`Outcome.STOPPED`, 0, whether or not every run ended
  within the grace period;
- ownership lost (the leader Lease, or this replica's shards): another replica may
  already reconcile the same objects, so the process ends at once, runs and all, with
  :func:`exit_code` of :attr:`Outcome.LOST`, 3 — a graceful drain would keep two
  writers on one object for as long as it lasted.
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from runner.warm import tree as process_tree

log = logging.getLogger("runner.manager")


class Outcome(enum.Enum):
    STOPPED = "stopped"  # asked to stop: runnables stopped in order
    LOST = "lost"  # leadership or shard ownership lost: ended at once


def exit_code(outcome: Outcome) -> int:
    """The process's exit code for ``outcome`` (the only place it is decided)."""
    return 3 if outcome is Outcome.LOST else 0


def _exit_with_runs(code: int) -> NoReturn:
    """Exit at once, ending every run first: runs started cold (ansible-playbook a
    child of ours, its workers in sessions of their own) would outlive ``os._exit``;
    warm launchers would end theirs only once they noticed this process gone."""
    process_tree.kill_children()
    os._exit(code)


class Exit:
    """The way out of the process, shared by the manager and its runnables."""

    def __init__(
        self, *, stop: threading.Event, end: Callable[[int], object] = _exit_with_runs
    ) -> None:
        self.stop = stop  # set: the manager stops its runnables and returns
        self._end = end

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("signal received; shutting down", extra={"signal": signal.Signals(signum).name})
        self.stop.set()

    def lost(self, message: str, **extra: object) -> None:
        """Ownership lost: log ``message`` as an error and end the process at once."""
        log.error(message, extra=extra or None)
        self._end(exit_code(Outcome.LOST))

    def stopped(self, *, clean: bool) -> int:
        """The runnables stopped (``clean``: every run ended in time): the exit code."""
        log.info("stopped", extra={"clean": clean})
        return exit_code(Outcome.STOPPED)
