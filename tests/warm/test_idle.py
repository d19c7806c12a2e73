"""Warm launchers that served no run for ``idle_seconds`` end, giving their memory back;
the next run starts them again, waits for them and is served warm; a run in flight keeps
them, and 0 never releases them (runner/warm/pool.py, succession.py)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner import warm
from runner.ansible import launch
from runner.warm import recycle, spawn, succession
from testkit.helpers import wait_for
from tests.ansible.conftest import Captured
from tests.warm.conftest import Run, not_warm, processes_with

IDLE = 1  # seconds: the pool's idle_seconds in this module, unless a test says otherwise
RELEASED = "warm launchers released after a time without runs; the next run starts them again"


@pytest.fixture
def launchers(request: pytest.FixtureRequest) -> Iterator[warm.Launchers]:
    """This module's pool (``run_warm`` runs through it): released after ``IDLE``
    seconds without a run, or the test's ``idle_seconds`` (indirect parameter)."""
    pool = warm.Launchers(idle_seconds=getattr(request, "param", IDLE))
    yield pool
    pool.close()


@pytest.fixture
def warm_log() -> Iterator[Captured]:
    """What runner.warm logs, its info lines included."""
    logger = logging.getLogger("runner.warm")
    handler, level = Captured(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def _started(log: Captured) -> dict[str, int]:
    """Launcher name → pid of the process last started for it, from the pool's log."""
    found: dict[str, int] = {}
    for record in log.with_message("warm launcher started"):
        found[record.__dict__["launcher"]] = record.__dict__["pid"]
    return found


def _released(log: Captured) -> list[dict[str, int]]:
    """The launchers (name → pid) of each release the pool logged."""
    return [dict(r.__dict__["launchers"]) for r in log.with_message(RELEASED)]


def _present(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still have a process (a zombie not reaped yet counts)."""
    return [pid for pid in pids if os.path.exists(f"/proc/{pid}")]


def _unchanged_for(seconds: float, observe: Any, expected: object) -> None:
    """Watch ``observe()`` for ``seconds``: it must stay ``expected`` all along."""
    since = time.monotonic()
    seen = wait_for(
        lambda: (time.monotonic() - since, observe()),
        until=lambda s: s[0] >= seconds or s[1] != expected,
        describe=f"{seconds:g} s to pass or {expected!r} to change",
        timeout=seconds + 30,
    )
    assert seen[1] == expected, f"expected {expected!r} for {seconds:g} s, saw {seen[1]!r}"


def test_idle_launchers_end_and_the_next_run_starts_them_warm(
    launchers: warm.Launchers, run_warm: Run, warm_log: Captured
) -> None:
    assert not run_warm("inspect").failed, "expected the first run (cold) to succeed"
    first = _started(warm_log)
    assert len(first) == 2 and "module" in first, (
        f"expected a program and the module launcher started, saw {first}"
    )
    released = wait_for(
        lambda: _released(warm_log),
        describe=f"the launchers released {IDLE} s after the run",
        timeout=60,
    )
    assert released == [first], f"expected one release of {first}, saw {released}"
    wait_for(
        lambda: _present(list(first.values())),
        until=lambda pids: not pids,
        describe="the released launchers' processes gone (and reaped)",
        timeout=30,
    )
    seen = (launchers.pids(), launchers.serving(), launchers.memory_bytes())
    assert seen == ([], {}, 0), f"expected no launcher, no pid and no memory, saw {seen}"
    assert launchers.recycles["idle"] == 2, f"expected 2 idle releases, saw {launchers.recycles}"

    result = run_warm("inspect")
    assert not_warm([result]) == [], "expected the run after the release served warm"
    again = _started(warm_log)
    assert set(again) == set(first) and set(again.values()).isdisjoint(first.values()), (
        f"expected the same launchers started again as new processes: before {first}, after {again}"
    )


def test_a_run_in_flight_keeps_the_launchers(
    launchers: warm.Launchers, run_warm: Run, warm_log: Captured, tmp_path: Path
) -> None:
    """The run waits in its controller (a lookup, no module meanwhile) for 3 idle periods:
    neither its program launcher nor the module launcher its later task uses ends."""
    assert not run_warm("inspect").failed, "expected the first run (cold) to succeed"
    gate = tmp_path / "gate"
    results: list[launch.RunResult] = []
    held = threading.Thread(
        target=lambda: results.append(
            run_warm("held", extravars={"gate": str(gate)}, private_data_dir=tmp_path / "held")
        )
    )
    held.start()
    try:
        wait_for(lambda: processes_with(str(gate)), describe="the run held", timeout=60)
        serving = launchers.serving()
        assert len(serving) == 2, f"expected both launchers serving the held run, saw {serving}"
        _unchanged_for(3 * IDLE + recycle.GRACE, launchers.serving, serving)
        assert launchers.recycles["idle"] == 0, launchers.recycles
    finally:
        gate.touch()
        held.join(120)
    assert len(results) == 1, "expected the held run to return"
    assert not_warm(results[:1]) == [], "expected the held run warm to its end"
    wait_for(
        lambda: _present(list(serving.values())),
        until=lambda pids: not pids,
        describe=f"the launchers released {IDLE} s after the held run ended",
        timeout=60,
    )


@pytest.mark.parametrize("launchers", [pytest.param(0, id="idle-0")], indirect=True)
def test_idle_seconds_0_never_releases(
    launchers: warm.Launchers, run_warm: Run, warm_log: Captured
) -> None:
    assert not run_warm("inspect").failed, "expected the first run (cold) to succeed"
    wait_for(launchers.ready, describe="the launchers serving", timeout=60)
    serving = launchers.serving()
    _unchanged_for(3 * IDLE + recycle.GRACE, launchers.serving, serving)
    assert _released(warm_log) == [], f"expected no release, saw {_released(warm_log)}"
    assert launchers.recycles["idle"] == 0, launchers.recycles


def _never_serving(launcher: spawn.Launcher) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"])


def _exiting(launcher: spawn.Launcher) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["false"])


def _none(launcher: spawn.Launcher) -> None:
    return None


@pytest.mark.parametrize(
    ("start", "restart_wait"),
    [
        # A wait longer than this test may take: only seeing the exit can end it.
        pytest.param(_exiting, 600.0, id="exits-at-once"),
        pytest.param(_none, 600.0, id="cannot-start"),
        # A launcher that lives but never serves: only the bound can end the wait.
        pytest.param(_never_serving, 1.0, id="never-serves"),
    ],
)
def test_a_launcher_that_does_not_start_again_means_cold_not_a_hang(
    launchers: warm.Launchers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start: Any,
    restart_wait: float,
) -> None:
    """The pool as the Ansible stage uses it, without Ansible: after a release, a run's
    command waits for launchers started again only while they may still serve, and at
    most RESTART_WAIT; then the client finds no socket and starts cold."""
    env, cwd = dict(os.environ), str(tmp_path)

    def begin(number: int) -> tuple[list[str], Path]:
        status = tmp_path / f"status-{number}"
        launchers.module_interpreter(env=env, cwd=cwd)
        return launchers.program_command(["true"], env=env, cwd=cwd, status=status), status

    _, status = begin(1)
    wait_for(launchers.ready, describe="the launchers serving", timeout=60)
    launchers.outcome(status)  # the run ended
    wait_for(launchers.pids, until=lambda pids: not pids, describe="a release", timeout=60)

    monkeypatch.setattr(spawn.Spawner, "start", lambda self, launcher: start(launcher))
    monkeypatch.setattr(succession, "RESTART_WAIT", restart_wait)
    commands: list[list[str]] = []
    waiter = threading.Thread(target=lambda: commands.append(begin(2)[0]), daemon=True)
    waiter.start()
    try:
        wait_for(
            lambda: not waiter.is_alive(),
            describe=f"the run's command (the restart wait is {restart_wait:g} s)",
            timeout=30,
        )
        (command,) = commands
        socket = Path(command[command.index("--socket") + 1])
        assert not socket.exists(), f"expected no launcher serving {socket}: the run goes cold"
    finally:
        for pid in launchers.pids():
            os.kill(pid, signal.SIGKILL)  # the stand-ins this test started
