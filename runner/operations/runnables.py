"""Runnable groups: what the manager starts, in controller-runtime's order, and stops in reverse.

controller-runtime's manager keeps its runnables in groups — HTTP servers, webhooks,
caches, then what needs leader election — starts the groups in that order and stops
them in the reverse one. The manager (:mod:`runner.operations.manager`) does the same
with :class:`Runnables`:

- :attr:`Group.SERVERS`: probes, metrics, custom metrics (bound when made, before
  anything connects to the cluster: a taken port is a start-up error);
- :attr:`Group.LAUNCHERS`: the warm launchers every Ansible run starts from; closed
  once no run can start any more (closing kills whatever still runs);
- :attr:`Group.WEBHOOKS`: admission answers, served by every replica (they never write);
- :attr:`Group.CACHES`: the informers, warm on a standby too, so it takes over
  without relisting;
- :attr:`Group.ELECTION`: the leader Lease or this replica's shard Leases — who may write;
- :attr:`Group.WORKERS`: the owner-injecting proxy and the controllers: the only writers.

Stopping goes the other way: the workers drain within the grace period, then the
Leases are released (only when the runs ended in time), ..., the listeners last.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Callable
from typing import Protocol


class Group(enum.Enum):
    """The groups, in start order."""

    SERVERS = "servers"
    LAUNCHERS = "launchers"
    WEBHOOKS = "webhooks"
    CACHES = "caches"
    ELECTION = "election"
    WORKERS = "workers"


class Runnable(Protocol):
    """One thing the manager runs."""

    def start(self, stop: threading.Event) -> bool:
        """Start; False when ``stop`` was set before it could (nothing after it starts)."""
        ...

    def stop(self, *, deadline: float, clean: bool) -> bool:
        """Stop by ``deadline`` (``time.monotonic()``); ``clean``: whether everything
        stopped before it ended in time. True when it ended in time too."""
        ...


@dataclasses.dataclass(frozen=True)
class Hooks:
    """A runnable made of two plain calls (a listener, a reporter, the launchers)."""

    on_start: Callable[[], object] | None = None
    on_stop: Callable[[], object] | None = None

    def start(self, stop: threading.Event) -> bool:
        if self.on_start is not None:
            self.on_start()
        return True

    def stop(self, *, deadline: float, clean: bool) -> bool:
        if self.on_stop is not None:
            self.on_stop()
        return True


class Runnables:
    """The manager's runnables by group; started group by group, stopped in reverse."""

    def __init__(self) -> None:
        self._groups: dict[Group, list[Runnable]] = {group: [] for group in Group}

    def add(self, group: Group, runnable: Runnable) -> None:
        self._groups[group].append(runnable)

    def start(self, stop: threading.Event) -> bool:
        """Start every group in order; False when stopped before all had started (a
        standby stopped while it waited for the leader Lease)."""
        for group in Group:
            for runnable in self._groups[group]:
                if not runnable.start(stop):
                    return False
        return True

    def stop(self, *, deadline: float) -> bool:
        """Stop every group in reverse order, each runnable in reverse order of addition
        (what started last stops first); True when all ended in time. Runnables that
        never started are stopped too: stopping one is safe either way."""
        clean = True
        for group in reversed(Group):
            for runnable in reversed(self._groups[group]):
                clean = runnable.stop(deadline=deadline, clean=clean) and clean
        return clean
