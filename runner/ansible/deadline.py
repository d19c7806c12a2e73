"""A run's timeout: at ``RunSpec.timeout`` the run's whole process tree is killed.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status), used
by :mod:`runner.ansible.launch` for runs with a timeout. ansible-runner's own
timeout kills only its child; cold ``ansible-playbook``'s workers (in sessions of
their own) and their tasks' processes would live on. Every process of a run
inherits ansible-runner's per-run artifact dir variable, so that mark finds them
wherever they moved (:mod:`runner.warm.tree`). The warm launchers are spared: they
kill what they forked for a run when its client dies, and the program launcher's
own environment may hold an earlier run's mark.
"""

from __future__ import annotations

import threading

from runner import warm
from runner.warm import tree


class Deadline:
    """A timer that kills one run's process tree when it fires."""

    def __init__(
        self, timeout: float | None, *, mark: str, launchers: warm.Launchers | None
    ) -> None:
        """``timeout``: seconds (None: never); ``mark``: the ``NAME=value`` environment
        entry every process of the run carries."""
        self._mark = mark
        self._launchers = launchers
        self._expired = threading.Event()
        self._timer: threading.Timer | None = None
        if timeout is not None:
            self._timer = threading.Timer(timeout, self._expire)
            self._timer.daemon = True

    def start(self) -> None:
        if self._timer is not None:
            self._timer.start()

    def cancel(self) -> None:
        """The run ended: the timer will not fire from now on."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()

    def expired(self) -> bool:
        """Whether the run was killed at its timeout."""
        return self._expired.is_set()

    def _expire(self) -> None:
        self._expired.set()
        launchers = self._launchers
        spare = tree.descendants(launchers.pids()) if launchers else set()
        tree.kill_tree(tree.marked(self._mark) - spare)
