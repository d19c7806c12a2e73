"""Results and requests of a run's workers, waited for instead of polled.

Part of :mod:`runner.warm`, installed by :mod:`runner.warm.child` in each
``ansible-playbook`` child. While its workers run a task, ansible-core's controller
(``StrategyBase._wait_on_pending_results``) loops: it takes the results its results
thread has queued (and, from 2.21, its workers' requests on the RPC queue), checks
its workers are alive, and sleeps ``DEFAULT_INTERNAL_POLL_INTERVAL`` (1 ms) —
about a thousand wake-ups a second. With both cores busy with other work, that was a
quarter of the ``ansible-playbook`` process's own CPU time in a warm Memcached reconcile.

Here the controller is told instead: the results thread's queue and the RPC queue
set an event whenever something arrives, and the poll-interval sleep of the strategy
module waits on that event. It ends as soon as anything arrives, so nothing waits
longer than it did; with nothing arriving it ends after :data:`WAKE_BOUND`, so a
worker that died or a stop the controller was asked for is still seen, within that
bound instead of within 1 ms. Every other sleep of the module (its 0.1 ms wait for a
free worker slot) is the real one.
"""

from __future__ import annotations

import functools
import importlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

#: Longest wait with nothing arriving: how soon a dead worker or a stop is noticed.
WAKE_BOUND = 0.05

#: Set whenever a result or a request reaches the controller; cleared by the waiter.
arrived = threading.Event()


class _Signalling(deque[Any]):
    """The controller's queue of results: each one appended sets :data:`arrived`."""

    def append(self, item: Any, /) -> None:
        super().append(item)
        arrived.set()


class StrategyTime:
    """The ``time`` module as ``ansible.plugins.strategy`` sees it: the same, except that
    the poll-interval sleep ends when something arrives (see the module's text)."""

    def __init__(self, real: Any, *, interval: Callable[[], float]) -> None:
        self._real = real
        self._interval = interval
        self.armed = False  # the newest strategy's queues signal; else sleep as ever

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def sleep(self, seconds: float) -> None:
        if not self.armed or seconds != self._interval():
            self._real.sleep(seconds)
            return
        arrived.wait(max(seconds, WAKE_BOUND))
        arrived.clear()  # before the caller looks: what arrives from now on sets it again


def _signal_on_put(rpc: queue.Queue[Any]) -> None:
    """``rpc``'s ``put`` also sets :data:`arrived`."""
    put = rpc.put

    @functools.wraps(put)
    def signalling_put(*args: Any, **kwargs: Any) -> None:
        put(*args, **kwargs)
        arrived.set()

    rpc.put = signalling_put  # type: ignore[method-assign]


def install() -> None:
    """In an ``ansible-playbook`` child: each strategy's queues signal, and its module's
    poll-interval sleep waits for them."""
    strategy = importlib.import_module("ansible.plugins.strategy")
    constants = importlib.import_module("ansible.constants")
    clock = StrategyTime(time, interval=lambda: float(constants.DEFAULT_INTERNAL_POLL_INTERVAL))
    base = strategy.StrategyBase
    original = base.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        results, rpc = getattr(self, "_results", None), getattr(self, "_rpc_queue", None)
        clock.armed = type(results) is deque and (rpc is None or isinstance(rpc, queue.Queue))
        if not clock.armed:
            return  # not the queues this relies on: poll, as ansible-core does
        # Its results thread starts in __init__, but nothing arrives before a task is queued.
        self._results = _Signalling(results)  # type: ignore[arg-type]
        if rpc is not None:
            _signal_on_put(rpc)

    base.__init__ = init
    setattr(strategy, "time", clock)  # noqa: B010 - the module's global, read at each call
