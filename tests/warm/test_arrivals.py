"""A warm ansible-playbook waits for its workers' results instead of polling for them
(runner/warm/arrivals.py), on ansible-core's own strategy code.

Each case runs in a fresh interpreter: installing patches ansible-core's strategy
module, which this process must keep as it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ansible.plugins import strategy

ROOT = Path(__file__).resolve().parents[2]

#: A controller (ansible-core's StrategyBase and its _wait_on_pending_results) waiting for
#: one result that a stand-in worker delivers after WORK seconds, through the queue the
#: results thread appends to, or (RPC) through the strategy's RPC queue. Prints how many
#: times the controller looked for results, and what it got.
SCRIPT = textwrap.dedent(
    """
    import json, queue, sys, threading, time
    from runner.warm import arrivals

    mode, via, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if mode == "on":
        arrivals.install()
        arrivals.WAKE_BOUND = bound
    from ansible.plugins import strategy as S

    class TQM:
        _workers = []
        _terminated = False
        def __init__(self):
            self._final_q = queue.Queue()
        def get_inventory(self): return None
        def get_variable_manager(self): return None
        def get_loader(self): return None
        def has_dead_workers(self): return False

    s = S.StrategyBase(TQM())
    passes = 0

    def process(iterator, **kwargs):
        global passes
        passes += 1
        out = []
        while True:
            try:
                out.append(("rpc", s._rpc_queue.get(block=False)))
            except (AttributeError, queue.Empty):
                break
        with s._results_lock:
            while s._results:
                out.append(("result", s._results.popleft()))
        s._pending_results -= len(out)
        return out

    s._process_pending_results = process
    s._pending_results = 1
    WORK = 0.5
    if via == "slot":  # the strategy's other sleep: its wait for a free worker slot
        start = time.monotonic()
        S.time.sleep(0.0001)
        print(json.dumps({"slept": time.monotonic() - start, "armed": S.time.sleep != time.sleep}))
        sys.exit(0)

    def worker():
        time.sleep(WORK)  # the task's own work
        if via == "rpc":
            s._rpc_queue.put("request")
        else:
            with s._results_lock:
                s._results.append("result")

    threading.Thread(target=worker, daemon=True).start()
    got = s._wait_on_pending_results(iterator=None)
    print(json.dumps({"passes": passes, "got": got, "work": WORK}))
    """
)


def _wait(mode: str, via: str = "result", bound: float = 0.05) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, via, str(bound)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0, f"the controller script failed:\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _has_rpc_queue() -> bool:
    return hasattr(strategy.StrategyBase, "_process_rpc_queue")


def test_the_controller_looks_for_results_when_they_arrive_not_a_thousand_times_a_second() -> None:
    polled, waited = _wait("off"), _wait("on")
    assert polled["got"] == waited["got"] == [["result", "result"]], (
        f"expected both to return the one result, saw {polled['got']} and {waited['got']}"
    )
    # 0.5 s of work: ansible-core's 1 ms poll looks about 500 times (fewer on a busy
    # machine), the wait once per arrival or per 50 ms bound: at most about 11.
    assert int(waited["passes"]) <= 15, f"expected at most 15 looks, saw {waited['passes']}"
    assert int(polled["passes"]) > 3 * int(waited["passes"]), (
        f"expected the poll to look far more often: polled {polled['passes']}, "
        f"waited {waited['passes']}"
    )


@pytest.mark.parametrize("via", ["result", "rpc"])
def test_an_arrival_ends_the_wait_at_once(via: str) -> None:
    """With a bound of 60 s, only the arrival's signal can end the wait within the
    script's 20 s."""
    if via == "rpc" and not _has_rpc_queue():
        pytest.skip("this ansible-core has no worker RPC queue")
    waited = _wait("on", via=via, bound=60)
    assert waited["got"] == [[via, "request" if via == "rpc" else "result"]], (
        f"expected the {via} to be returned, saw {waited['got']}"
    )
    assert int(waited["passes"]) <= 3, f"expected at most 3 looks, saw {waited['passes']}"


def test_other_sleeps_of_the_strategy_module_are_real() -> None:
    slot = _wait("on", via="slot", bound=60)
    assert slot["armed"] and float(str(slot["slept"])) < 30, (
        f"expected the installed clock to sleep 0.1 ms for real, saw {slot}"
    )
