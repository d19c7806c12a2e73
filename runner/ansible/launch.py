"""The one place that runs Ansible: a private data dir in, a ``RunResult`` out.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status).
:class:`AnsibleRunner` is the only code in the runtime that knows
ansible-runner's API. Per run it writes the CR's private data dir (extra vars,
inventory, a play for a role), runs ``ansible-playbook`` through
``ansible_runner.Runner`` and folds the job events (:mod:`runner.ansible.events`).

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

import codecs
import contextlib
import json
import os
import select
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import ansible_runner
from ansible_runner.utils import OutputEventFilter

from runner import warm
from runner.ansible import events, privatedir
from runner.ansible.events import FailedTask, LogEvents, Logger
from runner.base import errors
from runner.warm import tree

__all__ = ["AnsibleRunner", "FailedTask", "LogEvents", "RunResult", "RunSpec", "strip_quotes"]

#: The shipped ``playbook_operator.util`` collection, first on every collections path.
COLLECTION_DIR = Path(__file__).resolve().parent.parent / "collection"
#: Ansible's default collections path; kept after ours and the user's.
DEFAULT_COLLECTIONS_PATH = ("~/.ansible/collections", "/usr/share/ansible/collections")
#: Lets the collection's modules import ``runner.kube`` when the package is not installed.
LIB_ENV = "PLAYBOOK_OPERATOR_LIB"
_LIB_DIR = Path(__file__).resolve().parent.parent.parent
#: In a run's artifact dir: how ansible-playbook was started (warm, cold, lost: why).
LAUNCHER_STATUS = "launcher"
#: ``RunResult.status`` of a run killed at ``RunSpec.timeout`` (ansible-runner's word).
TIMEOUT = "timeout"
#: Each CR's Ansible local temp dir, in its private data dir (ANSIBLE_LOCAL_TEMP).
LOCAL_TEMP = privatedir.LOCAL_TEMP


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One run of a role or playbook for one custom resource.

    ``private_data_dir`` is per CR and reused across runs; ``ident`` names this
    run's ``artifacts/<ident>``. ``cmdline`` is operator-sdk's ``--ansible-args``
    (outer single quotes are stripped). ``gathering_explicit``: default
    ``ANSIBLE_GATHERING=explicit`` unless the environment sets it.
    ``rotate_artifacts`` keeps that many artifact dirs (0 keeps all).
    ``on_event`` sees every job event too, in order (``playbook-operator preview``
    reads the tasks' results from them).
    """

    ident: str
    private_data_dir: Path
    extravars: Mapping[str, Any]
    playbook: Path | None = None
    role: str | None = None
    roles_path: Sequence[Path] = ()
    envvars: Mapping[str, str] = field(default_factory=dict)
    verbosity: int = 0
    cmdline: str = ""
    rotate_artifacts: int = 20
    log_events: LogEvents = LogEvents.TASKS
    gathering_explicit: bool = True
    collections_path: Sequence[Path] = ()
    inventory: Path | None = None  # default: localhost, local connection, this Python
    timeout: float | None = None  # seconds; the run is killed after it
    on_event: Callable[[Mapping[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        if (self.playbook is None) == (self.role is None):
            raise ValueError("RunSpec needs exactly one of playbook and role")
        if not self.ident or "/" in self.ident or self.ident in (".", "..", "latest"):
            raise ValueError(f"RunSpec ident {self.ident!r} cannot name an artifact dir")


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
    ) -> None:
        """``launchers``: start ``ansible-playbook`` and modules warm (:mod:`runner.warm`);
        None starts both cold, as ansible-runner does."""
        self._python = python
        self._ansible_playbook = ansible_playbook or _find_ansible_playbook(python)
        self._output_grace = output_grace
        self._launchers = launchers

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
        status, rc = self._execute(
            config,
            tally=tally,
            artifact_dir=artifact_dir,
            log=log,
            on_event=spec.on_event,
            timeout=spec.timeout,
            launchers=launchers,
        )
        if launchers is not None:
            how, why = launchers.outcome(artifact_dir / LAUNCHER_STATUS)
            if how == warm.LOST and status != TIMEOUT:
                # The launcher died mid-run, taking the run with it: run it again, cold.
                # (Not a run killed at its timeout: that one is over.)
                log.warning(
                    "warm launcher lost the run; running it again cold", extra={"reason": why}
                )
                return self._run(replace(spec, ident=f"{spec.ident}-cold"), log=log, launchers=None)
        privatedir.rotate(artifact_dir.parent, keep=spec.rotate_artifacts, log=log)
        privatedir.link_latest(artifact_dir)

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

    # -- the private data dir -------------------------------------------------

    def _config(self, spec: RunSpec, *, launchers: warm.Launchers | None) -> Any:
        pdd = spec.private_data_dir.resolve()
        pdd.mkdir(mode=0o700, parents=True, exist_ok=True)
        privatedir.clear_inputs(pdd)
        for sub in ("env", "inventory", "project"):
            (pdd / sub).mkdir(mode=0o700)
        privatedir.write_private(
            pdd / "env" / "extravars", json.dumps(dict(spec.extravars), default=_json)
        )
        env = self._environment(spec)
        if env.get("ANSIBLE_LOCAL_TEMP") == str(pdd / LOCAL_TEMP):
            # What the previous run of this CR left (one killed by its timeout never
            # cleans up); runs of one CR never overlap.
            shutil.rmtree(pdd / LOCAL_TEMP, ignore_errors=True)
            (pdd / LOCAL_TEMP).mkdir(mode=0o700)

        inventory = spec.inventory
        user_inventory = [
            Path(source.strip()).resolve()
            for source in {**os.environ, **env}.get("ANSIBLE_INVENTORY", "").split(",")
            if source.strip()
        ]
        if inventory is None and user_inventory:
            # ansible-operator's habit: $ANSIBLE_INVENTORY (files or directories, with
            # their group_vars/host_vars) is copied into the run's inventory, freshly for
            # each run so nothing of an earlier run's inventory lingers. Without a
            # definition of localhost there, Ansible's implicit localhost (local
            # connection, this Python) serves role plays, outside the group "all".
            inventory = pdd / "inventory"
            for source in user_inventory:
                if source.is_dir():
                    shutil.copytree(source, inventory, dirs_exist_ok=True)
                    continue
                name = "hosts" if len(user_inventory) == 1 else source.name
                shutil.copy2(source, inventory / name)
                for beside in ("group_vars", "host_vars"):  # read beside a file, as Ansible does
                    if (source.parent / beside).is_dir():
                        shutil.copytree(
                            source.parent / beside, inventory / beside, dirs_exist_ok=True
                        )
        if inventory is None:
            inventory = pdd / "inventory" / "hosts"
            python = shlex.quote(
                launchers.module_interpreter(env={**os.environ, **env}, cwd=str(pdd / "project"))
                if launchers is not None
                else self._python
            )
            line = f"localhost ansible_connection=local ansible_python_interpreter={python}"
            privatedir.write_private(inventory, line + "\n")
        if spec.playbook is not None:
            playbook = spec.playbook.resolve()
        else:
            play: dict[str, Any] = {"name": spec.role, "hosts": "localhost"}
            if env.get("ANSIBLE_GATHERING", os.environ.get("ANSIBLE_GATHERING")) == "explicit":
                play["gather_facts"] = False
            play["roles"] = [{"role": spec.role}]
            playbook = pdd / "project" / "role.json"
            privatedir.write_private(playbook, json.dumps([play]))

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
            private_data_dir=str(pdd),
            playbook=str(playbook),
            inventory=str(inventory),
            ident=spec.ident,
            envvars=env,
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

    def _environment(self, spec: RunSpec) -> dict[str, str]:
        env = dict(spec.envvars)
        seen = {**os.environ, **env}
        if spec.gathering_explicit and "ANSIBLE_GATHERING" not in seen:
            env["ANSIBLE_GATHERING"] = "explicit"
        if "ANSIBLE_LOCAL_TEMP" not in seen:
            # Ansible's controller-side temp dir inside the CR's private data dir, emptied
            # before each run, instead of ~/.ansible/tmp, where every killed run left one.
            env["ANSIBLE_LOCAL_TEMP"] = str(spec.private_data_dir.resolve() / LOCAL_TEMP)
        if "ANSIBLE_PIPELINING" not in seen:
            # Modules reach the local interpreter on stdin instead of through a temp
            # file and three shell commands per task (mkdir, chmod, rm).
            env["ANSIBLE_PIPELINING"] = "True"
        env["ANSIBLE_COLLECTIONS_PATH"] = _join_paths(
            [str(COLLECTION_DIR)],
            [str(p) for p in spec.collections_path],
            _split(seen.get("ANSIBLE_COLLECTIONS_PATH")),
            _split(seen.get("ANSIBLE_COLLECTIONS_PATHS")),
            [os.path.expanduser(p) for p in DEFAULT_COLLECTIONS_PATH],
            # operator_sdk.util for roles written for ansible-operator: last, so that an
            # installed copy (requirements.yml) is the one used wherever there is one.
            [str(COLLECTION_DIR / "compat")],
        )
        if spec.roles_path:
            env["ANSIBLE_ROLES_PATH"] = _join_paths(
                [str(p) for p in spec.roles_path], _split(seen.get("ANSIBLE_ROLES_PATH"))
            )
        env.setdefault(LIB_ENV, str(_LIB_DIR))
        return env

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
        read_fd, write_fd = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        # The child's stdout and stderr go to one pipe, as on the pty of pexpect mode.
        config.input_fd, config.output_fd, config.error_fd = devnull, write_fd, write_fd
        stop = threading.Event()
        reader = threading.Thread(
            target=_pump,
            args=(read_fd, sink, stop),
            name=f"ansible-events-{config.ident}",
            daemon=True,
        )
        reader.start()
        expired = threading.Event()
        timer = None
        if timeout is not None:
            # Every process of the run inherits ansible-runner's per-run artifact dir
            # variable: the mark finds them wherever they moved (workers setsid()).
            # Warm launchers kill what they forked for a run when its client dies; the
            # program launcher's own environment may hold an earlier run's mark.
            mark = f"AWX_ISOLATED_DATA_DIR={config.env.get('AWX_ISOLATED_DATA_DIR', '')}"

            def expire() -> None:
                expired.set()
                spare = tree.descendants(launchers.pids()) if launchers else set()
                tree.kill_tree(tree.marked(mark) - spare)

            timer = threading.Timer(timeout, expire)
            timer.daemon = True
            timer.start()
        try:
            status, rc = runner.run()
        except Exception as exc:
            raise errors.AnsibleLaunchError(f"ansible-runner failed: {exc}") from exc
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
            os.close(write_fd)
            os.close(devnull)
            # EOF comes once every holder of the pipe is gone. A process a task left
            # behind may hold it open: then read what is there and stop when it idles.
            reader.join(self._output_grace)
            if reader.is_alive():
                stop.set()
                reader.join(self._output_grace)
                log.warning("ansible output still open after the run; stopped reading it")
        if expired.is_set():
            status = TIMEOUT
            with contextlib.suppress(OSError):
                privatedir.write_private(artifact_dir / "status", TIMEOUT)
        return status, rc


def _pump(fd: int, sink: Any, stop: threading.Event) -> None:
    """Feed the child's output to ansible-runner's event filter until EOF, or until
    ``stop`` is set and nothing more arrives."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            if not poller.poll(200):
                if stop.is_set():
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            sink.write(decoder.decode(chunk))
        sink.write(decoder.decode(b"", final=True))
    finally:
        sink.close()
        os.close(fd)


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


def _json(value: Any) -> Any:
    """JSON for what YAML watch vars may hold besides JSON types."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _split(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p]


def _join_paths(*groups: Sequence[str]) -> str:
    seen: dict[str, None] = {}
    for group in groups:
        for path in group:
            seen.setdefault(path, None)
    return os.pathsep.join(seen)


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
