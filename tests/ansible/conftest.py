"""Fixtures for the Ansible stage: a runner, captured logs and a one-call playbook run."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import pytest

from runner import warm
from runner.ansible import launch
from runner.ansible import spec as ansible_spec

FIXTURES = Path(__file__).parent / "fixtures"
PLAYBOOKS = FIXTURES / "playbooks"
ROLES = FIXTURES / "roles"


def ansible_core_line(version: str) -> str:
    """``2.21.5`` → ``2.21``."""
    return ".".join(version.split(".")[:2])


#: The ansible-core line of this environment, which runs the plays: ``2.19``, ``2.20`` or ``2.21``.
ANSIBLE_CORE = ansible_core_line(metadata.version("ansible-core"))


class Captured(logging.Handler):
    """Keeps every record, for assertions on what a run logged."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]

    def with_message(self, message: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.getMessage() == message]

    def everything(self) -> str:
        """Every record with all its fields, as one text to search."""
        return "\n".join(f"{r.getMessage()} {r.__dict__!r}" for r in self.records)


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, Captured]]:
    handler = Captured()
    logger = logging.getLogger(f"tests.ansible.{uuid.uuid4().hex}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    yield logger, handler
    logger.removeHandler(handler)


@pytest.fixture(scope="session", params=["warm", "cold"])
def runner(request: pytest.FixtureRequest) -> Iterator[launch.AnsibleRunner]:
    """The Ansible stage as the runtime runs it (warm, the default) and cold: every test
    of this package runs both ways."""
    if request.param == "cold":
        yield launch.AnsibleRunner()
        return
    launchers = warm.Launchers()
    yield launch.AnsibleRunner(launchers=launchers)
    launchers.close()


class RunPlaybook(Protocol):
    def __call__(
        self, playbook: str, *, extravars: Mapping[str, Any] | None = None, **spec: Any
    ) -> launch.RunResult: ...


@pytest.fixture
def run_playbook(
    runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    tmp_path: Path,
) -> RunPlaybook:
    """Run ``fixtures/playbooks/<playbook>.yml`` in a private data dir under tmp_path."""
    logger, _ = captured

    def run(
        playbook: str, *, extravars: Mapping[str, Any] | None = None, **spec: Any
    ) -> launch.RunResult:
        spec.setdefault("private_data_dir", tmp_path / "pdd")
        spec.setdefault("ident", uuid.uuid4().hex[:12])
        return runner.run(
            ansible_spec.RunSpec(
                playbook=PLAYBOOKS / f"{playbook}.yml", extravars=extravars or {}, **spec
            ),
            log=logger,
        )

    return run


def debug_outputs(handler: Captured) -> dict[str, Any]:
    """Task name → what its ``debug`` printed, from the Tasks-level log lines."""
    return {r.__dict__["task"]: r.__dict__["output"] for r in handler.with_message("debug")}
