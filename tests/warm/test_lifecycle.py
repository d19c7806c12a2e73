"""Launchers never cost a run and never outlive the runtime: timeouts, crashes, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from runner import warm
from runner.ansible import privatedir
from testkit.helpers import wait_for
from tests.ansible.conftest import Captured
from tests.warm.conftest import PLAYBOOKS, ROLES, Run, processes_with, ready, started


def test_a_run_killed_by_its_timeout_leaves_no_process_and_no_temp_dir(
    launchers: warm.Launchers, run_warm: Run, tmp_path: Path
) -> None:
    ready(launchers, run_warm)
    home_temp = Path("~/.ansible/tmp").expanduser()
    before = set(home_temp.glob("ansible-local-*"))
    marker = f"warm-timeout-{uuid.uuid4().hex}"
    result = run_warm("sleepy", extravars={"seconds": 300, "marker": marker}, timeout=4)
    assert result.status == "timeout", result
    assert result.failed, "a timed-out run is a failure"
    wait_for(
        lambda: processes_with(marker),
        until=lambda pids: not pids,
        describe="no process of the timed-out run left",
        timeout=15,
    )
    left = set(home_temp.glob("ansible-local-*")) - before
    assert not left, f"the killed run left Ansible temp dirs in {home_temp}: {sorted(left)}"
    run_temp = tmp_path / "warm" / "pdd" / privatedir.LOCAL_TEMP
    assert list(run_temp.glob("ansible-local-*")), (
        f"expected the killed run's temp dir in {run_temp}"
    )
    assert not run_warm("inspect").failed
    kept = list(run_temp.glob("ansible-local-*"))
    assert not kept, f"expected the next run to start with an empty {run_temp}, found {kept}"


def test_launcher_killed_mid_run_runs_it_again_cold(
    launchers: warm.Launchers, run_warm: Run, captured_log: tuple[Any, Captured]
) -> None:
    ready(launchers, run_warm)
    marker = f"warm-lost-{uuid.uuid4().hex}"
    results: list[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(
            run_warm("sleepy", extravars={"seconds": 3, "marker": marker})
        )
    )
    thread.start()
    wait_for(lambda: processes_with(marker), describe="the run's task running", timeout=30)
    for pid in launchers.pids():
        os.kill(pid, signal.SIGKILL)
    thread.join(120)
    assert results, "the run never returned"
    result = results[0]
    assert not result.failed, result.failed_tasks
    assert result.artifact_dir.name.endswith("-cold"), result.artifact_dir
    warnings = captured_log[1].with_message("warm launcher lost the run; running it again cold")
    assert len(warnings) == 1, captured_log[1].messages()
    assert launchers.outcomes["lost"] == 1, launchers.outcomes

    # The next runs start the launchers again; once they are up, runs are warm again.
    ready(launchers, run_warm)
    assert started(run_warm("inspect")) == "warm"


RUNTIME = """
import logging, sys
from pathlib import Path
from runner import warm
from runner.ansible import launch, spec
pool = warm.Launchers()
runner = launch.AnsibleRunner(launchers=pool)
def run(seconds):
    return runner.run(
        spec.RunSpec(
            ident=f"run{seconds}", private_data_dir=Path(sys.argv[1]),
            playbook=Path(sys.argv[2]), extravars={"seconds": seconds, "marker": sys.argv[3]},
        ),
        log=logging.getLogger("runtime"),
    )
run(0)
import time
while not pool.ready():
    time.sleep(0.1)
print("ready", pool.directory, *pool.pids(), flush=True)
run(300)
"""


def test_runs_launchers_and_their_directory_end_with_a_killed_runtime(tmp_path: Path) -> None:
    marker = f"warm-orphan-{uuid.uuid4().hex}"
    runtime = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUNTIME,
            str(tmp_path / "pdd"),
            str(PLAYBOOKS / "sleepy.yml"),
            marker,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert runtime.stdout is not None
        line = runtime.stdout.readline().split()
        assert line and line[0] == "ready", f"runtime did not start its launchers: {line}"
        directory, launcher_pids = Path(line[1]), [int(p) for p in line[2:]]
        assert directory.is_dir(), f"expected the launchers' directory {directory}"
        wait_for(lambda: processes_with(marker), describe="the slow task running", timeout=60)
        runtime.kill()
        runtime.wait()
        wait_for(
            lambda: processes_with(marker) + [p for p in launcher_pids if _alive(p)],
            until=lambda pids: not pids,
            describe="no run and no launcher left after kill -9 of the runtime",
            timeout=20,
        )
        wait_for(
            directory.exists,
            until=lambda exists: not exists,
            describe=f"the launchers' directory {directory} removed after kill -9 of the runtime",
            timeout=10,
        )
    finally:
        if runtime.poll() is None:
            runtime.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_launcher_memory_is_reported_and_bounded(launchers: warm.Launchers, run_warm: Run) -> None:
    ready(launchers, run_warm)
    assert launchers.running() == 2, "one program launcher and one module launcher"
    rss = launchers.memory_bytes()
    assert 20 * 2**20 < rss < 300 * 2**20, f"launchers' RSS {rss / 2**20:.0f} MiB"
    assert ROLES.is_dir()
