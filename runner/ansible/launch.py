"""The one place that runs Ansible: a private data dir in, a ``RunResult`` out.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status).
:class:`AnsibleRunner` is the only code in the runtime that knows
ansible-runner's API. Per run it has the CR's private data dir written (extra
vars, inventory, a play for a role: :mod:`runner.ansible.inputs`), runs
``ansible-playbook`` through ``ansible_runner.Runner`` with its output read live
(:mod:`runner.ansible.output`) and killed at its timeout
(:mod:`runner.ansible.deadline`), and folds the job events
(:mod:`runner.ansible.events`) into a :class:`RunResult`.

Why not ``ansible_runner.run()``: it drives ``ansible-playbook`` through pexpect,
whose ``close()`` sleeps a fixed 0.1 s per run (ptyprocess ``delayafterclose``)
and forks from Python in a multi-threaded process; in the main thread it also
replaces the SIGINT/SIGTERM handlers. ansible-runner's ``subprocess`` mode
avoids all three, and streaming the child's stdout through our own pipe keeps
events (and task logs) live instead of arriving after the run.

With :class:`~runner.warm.Launchers` (warm execution, the default), the
``ansible-playbook`` command line gets the warm client in front of it and the
inventory names the warm module interpreter; everything else about the run is
the same. How the run started is read back from ``artifacts/<ident>/launcher``,
and a run whose launcher died mid-way is run again cold.

Thread safety: runs on different private data dirs may proceed at once from
several threads. Nothing here changes ``os.environ``, the working directory or
signal handlers; the child gets its environment and cwd explicitly. Never run
two runs on one private data dir at once (the queue never does).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ansible_runner
from ansible_runner.utils import OutputEventFilter

from runner import warm
from runner.ansible import deadline, events, inputs, output, privatedir, retention
from runner.ansible.events import FailedTask, Logger
from runner.ansible.spec import RunSpec
from runner.base import errors

__all__ = ["AnsibleRunner", "RunResult", "strip_quotes"]

#: In a run's artifact dir: how ansible-playbook was started (warm, cold, lost: why).
LAUNCHER_STATUS = "launcher"
#: ``RunResult.status`` of a run killed at ``RunSpec.timeout`` (ansible-runner's word).
TIMEOUT = "timeout"


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What one run did. Counters are ``playbook_on_stats`` for ``localhost``.

    ``failed``: a task failed without ``ignore_errors`` and was not rescued (the
    exit code is not used, as in operator-sdk). ``stats_missing``: Ansible ended
    without ``playbook_on_stats`` (a syntax error, a missing role, a timeout);
    operator-sdk treats that as an error and leaves the CR "Running". Such a run
    is also ``failed``, with one ``FailedTask`` named ``ansible-playbook`` whose
    message is Ansible's error, so no caller reports it as a success by mistake;
    ``output_tail`` holds Ansible's last lines.
    ``requeue_after``: seconds from the first ``requeue_after`` task (operator-sdk
    returns from the reconcile right there, without finishing the status).
    ``completion``: RFC 3339 time of the run's end. ``status``/``rc``: ansible-runner's
    view (``successful``, ``failed``, ``timeout``), for logs only. ``recap``: the PLAY
    RECAP as Ansible printed it ("" without stats); :meth:`report` is what to log.
    """

    ok: int
    changed: int
    skipped: int
    failures: int
    completion: str
    failed: bool
    failed_tasks: tuple[FailedTask, ...]
    requeue_after: float | None
    stats_missing: bool
    duration: float
    artifact_dir: Path
    status: str
    rc: int | None
    output_tail: str
    recap: str = ""

    def report(self) -> str:
        """What to log for a run that failed: each failed task with its message, then
        the PLAY RECAP. Never Ansible's whole output: at the default verbosity it holds
        every task's result, which may be anything a role read."""
        lines = [
            f"{t.role + ' : ' if t.role else ''}{t.task}: {t.message}" for t in self.failed_tasks
        ]
        if self.recap:
            lines.append(self.recap)
        return "\n".join(lines) or self.status


def strip_quotes(cmdline: str) -> str:
    """operator-sdk's ``--ansible-args`` handling: drop one pair of outer single quotes."""
    if len(cmdline) >= 2 and cmdline[0] == "'" and cmdline[-1] == "'":
        return cmdline[1:-1]
    return cmdline


class AnsibleRunner:
    """Runs roles and playbooks with ansible-runner; one instance serves all workers."""

    def __init__(
        self,
        *,
        python: str = sys.executable,
        ansible_playbook: str | None = None,
        output_grace: float = 5.0,
        launchers: warm.Launchers | None = None,
        artifacts: retention.ArtifactBudget | None = None,
    ) -> None:
        """``launchers``: start ``ansible-playbook`` and modules warm (:mod:`runner.warm`);
        None starts both cold, as ansible-runner does. ``artifacts``: the cap on every
        CR's artifacts together; None keeps each CR's ``rotate_artifacts`` only."""
        self._python = python
        self._ansible_playbook = ansible_playbook or _find_ansible_playbook(python)
        self._output_grace = output_grace
        self._launchers = launchers
        self._artifacts = artifacts

    def run(self, spec: RunSpec, *, log: Logger) -> RunResult:
        """Run ``spec`` to the end. Raises :class:`~runner.base.errors.AnsibleLaunchError`
        when ansible-runner cannot start; a failing play is a ``RunResult``."""
        return self._run(spec, log=log, launchers=self._launchers)

    def _run(self, spec: RunSpec, *, log: Logger, launchers: warm.Launchers | None) -> RunResult:
        started = time.monotonic()
        tally = events.Tally(log=log, level=spec.log_events, verbosity=spec.verbosity)
        try:
            config = self._config(spec, launchers=launchers)
        except (OSError, ValueError, ansible_runner.ConfigurationError) as exc:
            raise errors.AnsibleLaunchError(
                f"cannot prepare the Ansible run in {spec.private_data_dir}: {exc}"
            ) from exc
        artifact_dir = Path(config.artifact_dir)
        try:
            status, rc = self._execute(
                config,
                tally=tally,
                artifact_dir=artifact_dir,
                log=log,
                on_event=spec.on_event,
                timeout=spec.timeout,
                launchers=launchers,
            )
        except BaseException:
            if launchers is not None:
                launchers.abandoned(artifact_dir / LAUNCHER_STATUS)
            raise
        if launchers is not None:
            how, why = launchers.outcome(artifact_dir / LAUNCHER_STATUS)
            if how == warm.LOST and status != TIMEOUT:
                # The launcher died mid-run, taking the run with it: run it again, cold.
                # (Not a run killed at its timeout: that one is over.)
                log.warning(
                    "warm launcher lost the run; running it again cold", extra={"reason": why}
                )
                return self._run(replace(spec, ident=f"{spec.ident}-cold"), log=log, launchers=None)
        rotated = privatedir.rotate(artifact_dir.parent, keep=spec.rotate_artifacts, log=log)
        privatedir.link_latest(artifact_dir)
        if self._artifacts is not None:
            self._artifacts.forget(rotated)
            self._artifacts.add(artifact_dir)

        failed_tasks = tally.failed_tasks()
        if status == TIMEOUT:
            failed_tasks = (*failed_tasks, _timed_out(tally, timeout=spec.timeout))
        elif tally.stats is None and not failed_tasks:
            message = _no_stats_message(tally.output_tail())
            failed_tasks = (FailedTask(task="ansible-playbook", role=None, message=message),)
        return RunResult(
            ok=tally.count("ok"),
            changed=tally.count("changed"),
            skipped=tally.count("skipped"),
            failures=tally.count("failures"),
            completion=_rfc3339(tally.stats_created),
            failed=bool(failed_tasks),  # always when stats are missing
            failed_tasks=failed_tasks,
            requeue_after=tally.requeue_after,
            stats_missing=tally.stats is None,
            duration=time.monotonic() - started,
            artifact_dir=artifact_dir,
            status=str(status),
            rc=rc if isinstance(rc, int) else None,
            output_tail=tally.output_tail() if tally.stats is None else "",
            recap=tally.recap,
        )

    # -- ansible-runner's configuration --------------------------------------

    def _config(self, spec: RunSpec, *, launchers: warm.Launchers | None) -> Any:
        written = inputs.write(spec, python=self._python, launchers=launchers)
        cmdline = strip_quotes(spec.cmdline.strip())
        try:
            shlex.split(cmdline)  # a bad quote is a launch error, not a crash in ansible-runner
        except ValueError as exc:
            # The value is not repeated: it may hold a secret (-e password=...), and this
            # message reaches the CR's status and Events.
            raise errors.AnsibleLaunchError(f"--ansible-args cannot be split: {exc}") from exc
        if not os.access(self._ansible_playbook, os.X_OK) or os.path.isdir(self._ansible_playbook):
            # ansible-runner would report a missing program as a failed run (rc 254).
            raise errors.AnsibleLaunchError(
                f"ansible-playbook {self._ansible_playbook} is missing or not executable"
            )
        config = ansible_runner.RunnerConfig(
            private_data_dir=str(written.private_data_dir),
            playbook=str(written.playbook),
            inventory=str(written.inventory),
            ident=spec.ident,
            envvars=written.env,
            cmdline=cmdline or None,
            verbosity=spec.verbosity or None,
            rotate_artifacts=0,  # we rotate, sparing the `latest` link
            quiet=True,
            # settings, not the same-named arguments: prepare() reads these from here.
            settings={"suppress_output_file": True, "suppress_ansible_output": True},
        )
        config.prepare()
        # ansible-runner's subprocess mode (see the module doc). RunnerConfig itself
        # only offers pexpect, but Runner reads these attributes.
        config.runner_mode = "subprocess"
        # No subprocess_timeout: at its timeout ansible-runner kills only its child, and
        # cold ansible-playbook's workers (in sessions of their own) and their tasks'
        # processes live on; _execute kills the whole run instead.
        config.subprocess_timeout = None
        if config.command and config.command[0] == "ansible-playbook":
            config.command[0] = self._ansible_playbook  # the operator's PATH may lack it
        if launchers is not None:
            config.command = launchers.program_command(
                config.command,
                env=config.env,
                cwd=config.cwd,
                status=Path(config.artifact_dir) / LAUNCHER_STATUS,
            )
        return config

    # -- the run ------------------------------------------------------------

    def _execute(
        self,
        config: Any,
        *,
        tally: events.Tally,
        artifact_dir: Path,
        log: Logger,
        on_event: Callable[[Mapping[str, Any]], None] | None = None,
        timeout: float | None = None,
        launchers: warm.Launchers | None = None,
    ) -> tuple[Any, Any]:
        def handle(event: dict[str, Any]) -> bool:
            keep = tally.handle(event)  # redacts the event first, in place
            if on_event is not None and keep:
                on_event(event)
            return keep

        def started(status: Mapping[str, Any], runner_config: Any = None) -> None:
            if status.get("status") == "running":
                # ansible-runner has just written the `command` artifact, and the child is
                # not started yet: keep the command, not the environment's values.
                privatedir.withhold_environment(artifact_dir / "command")

        runner = ansible_runner.Runner(config, event_handler=handle, status_handler=started)
        try:
            # Closed by the reader: OutputEventFilter.close() closes its handle.
            stdout_file = privatedir.Stdout(artifact_dir / "stdout", tally)
        except OSError as exc:
            raise errors.AnsibleLaunchError(f"cannot write the run's artifacts: {exc}") from exc
        sink = OutputEventFilter(stdout_file, runner.event_callback, True)
        reader = output.Output(
            sink, name=f"ansible-events-{config.ident}", grace=self._output_grace
        )
        # The child's stdout and stderr go to one pipe, as on the pty of pexpect mode.
        config.input_fd, config.output_fd, config.error_fd = reader.descriptors()
        reader.start()
        # The mark every process of the run inherits (see runner.ansible.deadline).
        mark = f"AWX_ISOLATED_DATA_DIR={config.env.get('AWX_ISOLATED_DATA_DIR', '')}"
        timer = deadline.Deadline(timeout, mark=mark, launchers=launchers)
        timer.start()
        try:
            status, rc = runner.run()
        except Exception as exc:
            raise errors.AnsibleLaunchError(f"ansible-runner failed: {exc}") from exc
        finally:
            timer.cancel()
            reader.finish(log=log)
        if timer.expired():
            status = TIMEOUT
            with contextlib.suppress(OSError):
                privatedir.write_private(artifact_dir / "status", TIMEOUT)
        return status, rc


def _timed_out(tally: events.Tally, *, timeout: float | None) -> FailedTask:
    """The failure of a run killed at its timeout, naming the task it was in."""
    message = f"the Ansible run timed out after {timeout or 0:g}s"
    running = tally.running
    if running is None:
        return FailedTask(task="ansible-playbook", role=None, message=message)
    return replace(running, message=f"{message} in task {running.task!r}")


def _no_stats_message(output: str) -> str:
    """Why a run that never reached ``playbook_on_stats`` ended, for the Failure condition."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "ERROR" in line), None)
    if start is not None:
        return events.clip("\n".join(lines[start:]).strip())
    return "Ansible ended without a result (no playbook_on_stats event)"


def _find_ansible_playbook(python: str) -> str:
    beside = Path(python).parent / "ansible-playbook"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ansible-playbook")
    if found is None:
        raise errors.AnsibleLaunchError(f"ansible-playbook not found beside {python} or on PATH")
    return found


def _rfc3339(created: str | None) -> str:
    """operator-sdk's ``completion`` format: UTC, whole seconds, ``Z``.

    ansible-runner stamps events with a naive UTC ``isoformat()``.
    """
    moment = datetime.now(UTC)
    if created:
        try:
            parsed = datetime.fromisoformat(created)
            moment = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except ValueError:
            pass
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
