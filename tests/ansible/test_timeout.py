"""A run that outlives ``RunSpec.timeout``: killed whole, warm and cold, and named.

At the timeout every process of the run goes: ansible-playbook, its workers (which
leave its session) and what their tasks started. The failure names the task that
was running, for the CR's Failure condition.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner import warm
from runner.ansible import events, launch
from runner.ansible import spec as ansible_spec
from testkit.helpers import wait_for
from tests.ansible.conftest import PLAYBOOKS, Captured


@pytest.fixture(params=["warm", "cold"])
def fresh_runner(request: pytest.FixtureRequest) -> Iterator[launch.AnsibleRunner]:
    """A runner of its own: the session's launchers may be at their cap of distinct
    environments by now, and then every run of theirs starts cold."""
    if request.param == "cold":
        yield launch.AnsibleRunner()
        return
    launchers = warm.Launchers()
    yield launch.AnsibleRunner(launchers=launchers)
    launchers.close()


def processes_of_run(*, marker: str, private_data_dir: Path) -> list[str]:
    """``pid: command line`` of every live process whose command line or environment
    names the run (its unique sleep, or its private data dir). Warm launchers, children
    of this process started with the environment of the run that first needed them,
    are not the run's."""
    found: list[str] = []
    needles = (marker.encode(), str(private_data_dir).encode())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat[0] == "Z":  # a zombie runs nothing
            continue
        if int(stat[1]) == os.getpid() and b"zygote.main" in cmdline:
            continue
        if any(n in cmdline or n in environ for n in needles):
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry}: {command}")
    return found


def launcher_status(result: launch.RunResult) -> str:
    """How the run started: ``warm``, ``cold``, ``lost``; "" for a runner without launchers."""
    status = result.artifact_dir / launch.LAUNCHER_STATUS
    return status.read_text().partition(":")[0].strip() if status.exists() else ""


def test_timeout_kills_every_process_of_the_run_and_names_the_task(
    fresh_runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    tmp_path: Path,
) -> None:
    def run(playbook: str, **spec: Any) -> launch.RunResult:
        return fresh_runner.run(
            ansible_spec.RunSpec(
                ident=uuid.uuid4().hex[:12], playbook=PLAYBOOKS / f"{playbook}.yml", **spec
            ),
            log=captured[0],
        )

    marker = f"1000.{uuid.uuid4().int % 10**12:012d}"
    pdd = tmp_path / "pdd"
    started = wait_for(
        lambda: launcher_status(run("debug", private_data_dir=pdd, extravars={})),
        until=lambda status: status in ("", "warm"),
        describe="a warm run (the launchers started), or a cold runner",
        timeout=60,
    )
    for timeout in (3, 10, 30):
        # On a loaded machine a cold ansible-playbook may need more than 3 s to reach
        # its first task; then the run timed out before any task, and a longer one is
        # tried, so that the run is in 'Wait forever' when it is killed.
        result = run("hang", extravars={"marker": marker}, timeout=timeout, private_data_dir=pdd)
        assert result.failed and result.status == "timeout", (result.status, result.failed_tasks)
        if result.failed_tasks[-1].task != "ansible-playbook":
            break
    assert launcher_status(result) == started, "the run started as the one before it"
    assert result.duration < timeout + 10, f"the run took {result.duration:.1f}s, timeout {timeout}"
    wait_for(
        lambda: processes_of_run(marker=marker, private_data_dir=pdd),
        until=lambda left: not left,
        describe="no process of the timed-out run left",
        timeout=10,
    )
    assert result.failed_tasks == (
        events.FailedTask(
            task="Wait forever",
            role=None,
            message=f"the Ansible run timed out after {timeout}s in task 'Wait forever'",
        ),
    ), result.failed_tasks
