"""Fixtures for warm execution: launchers, and runs of fixture playbooks cold or warm."""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from runner import warm
from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from testkit.helpers import wait_for
from tests.ansible.conftest import Captured

FIXTURES = Path(__file__).parent / "fixtures"
PLAYBOOKS = FIXTURES / "playbooks"
ROLES = FIXTURES / "roles"


class Run(Protocol):
    def __call__(
        self,
        playbook: str | Path,
        *,
        extravars: Mapping[str, Any] | None = None,
        envvars: Mapping[str, str] | None = None,
        **spec: Any,
    ) -> launch.RunResult: ...


@pytest.fixture
def launchers() -> Iterator[warm.Launchers]:
    pool = warm.Launchers()
    yield pool
    pool.close()


def ready(pool: warm.Launchers, run: Run, playbook: str = "inspect", **kwargs: Any) -> None:
    """Start the launchers with one run (cold: they are not ready yet) and wait for them."""
    run(playbook, **kwargs)
    wait_for(pool.ready, describe="the warm launchers accepting requests", timeout=60)


def runner_with(pool: warm.Launchers | None, logger: logging.Logger, tmp_path: Path) -> Run:
    runner = launch.AnsibleRunner(launchers=pool)

    def run(
        playbook: str | Path,
        *,
        extravars: Mapping[str, Any] | None = None,
        envvars: Mapping[str, str] | None = None,
        **spec: Any,
    ) -> launch.RunResult:
        spec.setdefault("private_data_dir", tmp_path / "pdd")
        spec.setdefault("ident", uuid.uuid4().hex[:12])
        spec.setdefault("roles_path", (ROLES,))
        path = playbook if isinstance(playbook, Path) else PLAYBOOKS / f"{playbook}.yml"
        return runner.run(
            ansible_spec.RunSpec(
                playbook=path,
                extravars=extravars or {},
                envvars={"WARM_TEST_VALUE": "default", **(envvars or {})},
                **spec,
            ),
            log=logger,
        )

    return run


@pytest.fixture
def captured_log() -> Iterator[tuple[logging.Logger, Captured]]:
    handler = Captured()
    logger = logging.getLogger(f"tests.warm.{uuid.uuid4().hex}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    yield logger, handler
    logger.removeHandler(handler)


@pytest.fixture
def run_warm(
    launchers: warm.Launchers, captured_log: tuple[logging.Logger, Captured], tmp_path: Path
) -> Run:
    return runner_with(launchers, captured_log[0], tmp_path / "warm")


@pytest.fixture
def run_cold(captured_log: tuple[logging.Logger, Captured], tmp_path: Path) -> Run:
    return runner_with(None, captured_log[0], tmp_path / "cold")


def started(result: launch.RunResult) -> str:
    """How the run's ansible-playbook started: warm, cold or lost (with the reason)."""
    path = result.artifact_dir / launch.LAUNCHER_STATUS
    return path.read_text() if path.exists() else "no launcher status"


def outputs(result: launch.RunResult) -> dict[str, Any]:
    """Task name → what its debug task printed, from the run's job events."""
    found: dict[str, Any] = {}
    for event in events(result):
        data = event.get("event_data") or {}
        res = data.get("res") or {}
        if event.get("event") == "runner_on_ok" and "msg" in res:
            found[data.get("task", "")] = res["msg"]
    return found


def events(result: launch.RunResult) -> list[dict[str, Any]]:
    directory = result.artifact_dir / "job_events"
    loaded = [json.loads(p.read_text()) for p in directory.glob("*.json")]
    return sorted(loaded, key=lambda e: int(e.get("counter", 0)))


def processes_with(marker: str) -> list[int]:
    """Pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def not_warm(results: list[launch.RunResult]) -> list[str]:
    """What was not warm in ``results``: failed runs, cold ansible-playbook, cold modules."""
    problems = []
    for number, result in enumerate(results, 1):
        if result.failed:
            problems.append(f"run {number} failed: {result.failed_tasks}")
            continue
        how = started(result)
        if how != warm.WARM:
            problems.append(f"run {number}: ansible-playbook started {how!r}")
        facts = outputs(result).get("Module facts", {})
        if facts.get("preloaded") is not True:
            problems.append(f"run {number}: module did not start warm: {facts}")
    return problems
