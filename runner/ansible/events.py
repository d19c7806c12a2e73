"""Reading one run's job events: what failed, what was asked for, what to log.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status).
ansible-runner hands every job event of a run to :meth:`Tally.handle`, in
order, on one thread; after the run the runner turns the tally into a
``RunResult``. Semantics are operator-sdk's:

- a run failed when a ``runner_on_failed`` event was neither ``ignore_errors``
  nor rescued (the exit code is not used). Events do not say whether a block's
  ``rescue`` caught them, so ``playbook_on_stats`` decides: a host's first
  ``rescued`` failures were the rescued ones. Unlike operator-sdk, an
  unreachable host also fails the run (operator-sdk would report success);
- a ``requeue_after`` task's ``period`` is the requeue the role asks for;
- log lines follow ``--ansible-log-events``: ``Tasks`` logs task starts
  (:data:`TASK_START`, with ansible-operator's ``EventData.Name`` and ``event_type``)
  (except ``debug``/``set_fact``), debug output and failures; ``Everything`` one
  line per event; ``Nothing`` nothing; ``Changes`` (``--zap-devel``'s default) one
  ``task changed`` line per task that changed something, debug output and failures,
  so that a run reads in a few lines. A task's whole result (``ansible output``) is
  logged at logr verbosity 2 (``--zap-log-level=2``), or at info above Ansible's
  default verbosity (the verbosity annotation or ``--ansible-verbosity``); plain
  ``debug`` level does not show it: it is most of a run's bytes.
- a task's warnings and deprecations are logged as ``ansible warning`` /
  ``ansible deprecation warning`` lines, which :mod:`runner.base.logs` writes once per
  process per message (every run repeats them), and are cut from its output line.

A failure that a ``rescue`` later catches is still logged when it happens:
rescue is only known at the end.

Log lines carry plain snake_case ``extra`` fields (``task``, ``role``,
``error``...); callers bind the CR's identity with an adapter that merges
per-call ``extra`` (``runner.base.logs.BoundLogger`` does; Python 3.11's plain
``LoggerAdapter`` replaces it).

Secrets: only what ansible-runner's callback emits is read, and it has already
replaced the result and arguments of ``no_log`` tasks with a "censored" note.
A role that reads a Secret without ``no_log`` gets no such note, so
:meth:`Tally.handle` first redacts the event *in place* (:mod:`runner.ansible.redact`);
ansible-runner writes the event to ``job_events`` and its ``stdout`` to the
``stdout`` artifact after the handler, so both hold the redacted event, as do
the logs and ``preview``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.ansible import redact
from runner.base import errors
from runner.config import durations
from runner.config.sections import LogEvents

#: The ``requeue_after`` module under the names a task may use for it.
REQUEUE_ACTIONS = frozenset(
    {"requeue_after", "playbook_operator.util.requeue_after", "operator_sdk.util.requeue_after"}
)
_QUIET_STARTS = frozenset(
    {"debug", "ansible.builtin.debug", "set_fact", "ansible.builtin.set_fact"}
)
_TASK_STARTS = frozenset({"playbook_on_task_start", "playbook_on_handler_task_start"})
_DEBUG_ACTIONS = frozenset({"debug", "ansible.builtin.debug"})
# What ansible-runner's callback puts in place of a no_log task's arguments and result.
CENSORED = "the output has been hidden due to the fact that 'no_log: true' was specified"
_MESSAGE_LIMIT = 2000
_TAIL_LINES = 40
#: The ``extra`` field that makes runner.base.logs write a line once per process per value.
ONCE = "_once"
_WARNING_PREFIXES = ("[WARNING]:", "[DEPRECATION WARNING]:")
# What a task's output goes on with after its warnings: the result line, and so on.
_RESULT_PREFIXES = ("ok:", "changed:", "fatal:", "failed:", "skipping:", "included:", "[")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]

__all__ = ["FailedTask", "Logger", "Tally", "clip"]


_DEFAULT_VERBOSITY = 2
#: ansible-operator's message for a task start (its ``logging_event_handler``'s).
TASK_START = "[playbook task start]"
#: logr's V(2) (``--zap-log-level=2``): one step more verbose than ``debug``.
_RESULTS_LEVEL = logging.DEBUG - 1


@dataclass(frozen=True)
class FailedTask:
    """A task that failed the run. ``message`` is the result's ``msg`` (operator-sdk's
    Failure message), else its stderr or a compact rendering of the result."""

    task: str
    role: str | None
    message: str
    # The module that failed (``ansible.builtin.assert``): a role refusing its input is a
    # permanent failure (runner.reconcile.readiness). Not compared: it only qualifies.
    action: str = field(default="", compare=False)


@dataclass(frozen=True)
class _Failure:
    host: str
    kind: str  # the event: runner_on_failed | runner_on_unreachable
    task: FailedTask


class Tally:
    """Folds the job events of one run; not thread-safe (one reader per run)."""

    def __init__(self, *, log: Logger, level: LogEvents, verbosity: int) -> None:
        self._log = log
        self._level = level
        self._verbosity = verbosity
        self._failures: list[_Failure] = []
        self._output: deque[str] = deque(maxlen=_TAIL_LINES)
        self.stats: Mapping[str, Any] | None = None
        self.stats_created: str | None = None
        self.requeue_after: float | None = None
        #: The task started last (its message empty): the one running, until the next.
        self.running: FailedTask | None = None
        self._secret_values: set[str] = set()
        #: The PLAY RECAP block, from the stats event's output.
        self.recap = ""

    # -- after the run ----------------------------------------------------

    def failed_tasks(self) -> tuple[FailedTask, ...]:
        """Failures that count: not ignored, not rescued, unreachable hosts included."""
        rescued = dict(self._per_host("rescued"))
        dark = self._per_host("dark")
        counted: list[FailedTask] = []
        for failure in self._failures:
            if failure.kind == "runner_on_unreachable":
                # ignore_unreachable leaves no trace in the events, only in the stats.
                if self.stats is None or dark.get(failure.host, 0) > 0:
                    counted.append(failure.task)
            elif rescued.get(failure.host, 0) > 0:
                rescued[failure.host] -= 1
            else:
                counted.append(failure.task)
        return tuple(counted)

    def count(self, key: str, host: str = "localhost") -> int:
        """A ``playbook_on_stats`` counter for ``host`` (0 when absent)."""
        return self._per_host(key).get(host, 0)

    def output_tail(self) -> str:
        """The last lines Ansible printed outside events (its own errors)."""
        return "\n".join(self._output)

    def _per_host(self, key: str) -> dict[str, int]:
        table = (self.stats or {}).get(key)
        if not isinstance(table, Mapping):
            return {}
        return {str(h): int(n) for h, n in table.items() if isinstance(n, int | float)}

    # -- during the run ---------------------------------------------------

    def handle(self, event: dict[str, Any]) -> bool:
        """ansible-runner's ``event_handler``: fold and log one event. True: keep the
        event's JSON under ``artifacts/<ident>/job_events``."""
        try:
            self.redact(event)
        except Exception:  # never keep or log an event that could not be redacted
            self._log.exception("could not redact an ansible event; dropped it")
            event.clear()
            return False
        try:
            self._fold(event)
            self._write_log(event)
        except Exception:  # a bad event must not stop the reader and lose the rest
            self._log.exception("could not read an ansible event")
        return True

    def redact(self, event: dict[str, Any]) -> None:
        """Replace, in place, the data of every Secret in ``event`` with :data:`REDACTED`,
        and every Secret value seen so far in this run wherever it appears as text."""
        data = event.get("event_data")
        if isinstance(data, dict):
            redact.secrets(data, found=self._secret_values)
        if self._secret_values:
            redact.scrub(event, self._secret_values)

    def scrub(self, text: str) -> str:
        """``text`` without the Secret values this run has shown so far."""
        return str(redact.scrub(text, self._secret_values))

    def _fold(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        data = event.get("event_data") or {}
        if name == "verbose":
            self._output.append(str(event.get("stdout", "")))
        elif name in _TASK_STARTS:
            self.running = FailedTask(task=_task(data), role=_role(data), message="")
        elif (name == "runner_on_failed" and not data.get("ignore_errors")) or (
            name == "runner_on_unreachable"
        ):
            self._failures.append(_Failure(_host(data), str(name), _failed_task(data)))
        elif name == "runner_on_ok" and self.requeue_after is None and _is_requeue(data):
            # operator-sdk acts on the first requeue_after and stops reading there.
            self._read_period(data)
        elif name == "playbook_on_stats":
            self.recap = _ANSI.sub("", str(event.get("stdout") or "")).strip()
            self.stats = data
            self.stats_created = str(event.get("created") or "") or None

    def _read_period(self, data: Mapping[str, Any]) -> None:
        res = data.get("res")
        period = res.get("period") if isinstance(res, Mapping) else None
        if not isinstance(period, str):
            return
        try:
            self.requeue_after = durations.parse(period)
        except ValueError as exc:
            task = FailedTask(task=_task(data), role=_role(data), message=str(exc))
            self._failures.append(_Failure(_host(data), "runner_on_failed", task))

    # -- logging ----------------------------------------------------------

    def _write_log(self, event: Mapping[str, Any]) -> None:
        if self._level is LogEvents.NOTHING:
            return
        name = str(event.get("event", ""))
        data: Mapping[str, Any] = event.get("event_data") or {}
        if self._level is LogEvents.EVERYTHING:
            # ansible-core 2.19 prints a no_log task's failure message in its output
            # ("[ERROR]: Task failed: Action failed: ..."), so that output stays out.
            stdout = "" if _censored(data) else event.get("stdout", "")
            self._log.info(
                "ansible event", extra={"event": name, "event_data": data, "stdout": stdout}
            )
            return
        if "task" not in data:
            return
        fields = {"task": _task(data), "role": _role(data)}
        action = data.get("resolved_action") or data.get("task_action")
        for kind, text in _warnings(data.get("res")):
            # Every run is a new ansible-playbook, so Ansible repeats its warnings in each;
            # logs.setup's filter lets one line per distinct warning through per process.
            self._log.warning(
                f"ansible {kind}", extra={**fields, "warning": text, ONCE: f"{kind}:{text}"}
            )
        stdout = _without_warnings(str(event.get("stdout") or ""))
        if self._verbosity > 0 and stdout and not _censored(data):
            # The raw task output complements the structured lines below, never replaces
            # them; above the default verbosity (2) it is shown at info level.
            level = logging.INFO if self._verbosity > _DEFAULT_VERBOSITY else _RESULTS_LEVEL
            self._log.log(level, "ansible output", extra={**fields, "stdout": stdout})
        changes = self._level is LogEvents.CHANGES
        if name == "playbook_on_task_start" and action not in _QUIET_STARTS and not changes:
            # ansible-operator's line and field names, for the log queries built on them.
            upstream = {"event_type": name, "EventData.Name": data.get("name") or fields["task"]}
            self._log.info(TASK_START, extra={**fields, **upstream})
        elif name == "runner_on_ok" and action in _DEBUG_ACTIONS:
            self._log.info("debug", extra={**fields, "output": _debug_output(data.get("res"))})
        elif name == "runner_on_ok":
            # One line per finished task; at debug level so the default log stays one
            # line per task start, as operator-sdk's.
            res = data.get("res")
            changed = bool(res.get("changed")) if isinstance(res, Mapping) else False
            if changes and changed:
                self._log.info("task changed", extra=fields)
            elif not changes:
                self._log.debug("task ok", extra={**fields, "changed": changed})
        elif name == "runner_on_failed":
            extra = {**fields, "error": _failure_message(data.get("res")), "ignored": False}
            if data.get("task_path"):
                extra["task_path"] = data["task_path"]
            if data.get("ignore_errors"):
                self._log.info("task failed (ignored)", extra={**extra, "ignored": True})
            else:
                self._log.error("task failed", extra=extra)
        elif name == "runner_on_unreachable":
            error = _failure_message(data.get("res"))
            self._log.error("host unreachable", extra={**fields, "error": error})


def _warnings(res: Any) -> list[tuple[str, str]]:
    """A task result's ``warnings`` and ``deprecations`` as ("warning" | "deprecation
    warning", message) pairs; ansible-core gives strings or mappings with ``msg``."""
    if not isinstance(res, Mapping):
        return []
    found: list[tuple[str, str]] = []
    for key, kind in (("warnings", "warning"), ("deprecations", "deprecation warning")):
        entries = res.get(key)
        for entry in entries if isinstance(entries, list) else []:
            text = entry.get("msg") if isinstance(entry, Mapping) else entry
            if isinstance(text, str) and text.strip():
                found.append((kind, text.strip()))
    return found


def _without_warnings(stdout: str) -> str:
    """``stdout`` without Ansible's ``[WARNING]``/``[DEPRECATION WARNING]`` blocks (a
    marker line and, on ansible-core 2.18, its wrapped continuation lines): they are
    logged once each, from the result, instead of in every run's output."""
    kept: list[str] = []
    skipping = False
    for line in stdout.splitlines():
        plain = _ANSI.sub("", line)
        if plain.startswith(_WARNING_PREFIXES):
            skipping = True
            continue
        if skipping and plain.strip() and not plain.startswith(_RESULT_PREFIXES):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept).strip("\n")


def _host(data: Mapping[str, Any]) -> str:
    return str(data.get("host") or "localhost")


def _task(data: Mapping[str, Any]) -> str:
    return str(data.get("task") or data.get("name") or data.get("task_action") or "")


def _role(data: Mapping[str, Any]) -> str | None:
    role = data.get("role")
    return str(role) if role else None


def _censored(data: Mapping[str, Any]) -> bool:
    """Whether the event belongs to a ``no_log`` task."""
    res = data.get("res")
    if isinstance(res, Mapping) and "censored" in res:
        return True
    return str(data.get("task_args", "")).startswith(CENSORED)


def _is_requeue(data: Mapping[str, Any]) -> bool:
    return bool(REQUEUE_ACTIONS & {data.get("task_action"), data.get("resolved_action")})


def _failed_task(data: Mapping[str, Any]) -> FailedTask:
    return FailedTask(
        task=_task(data),
        role=_role(data),
        message=_failure_message(data.get("res")),
        action=str(data.get("resolved_action") or data.get("task_action") or ""),
    )


def _failure_message(res: Any) -> str:
    """``res.msg`` as operator-sdk reports it; else stderr, stdout or the result itself."""
    if not isinstance(res, Mapping):
        return errors.UNKNOWN_FAILURE
    msg = res.get("msg")
    if isinstance(msg, str) and msg.strip():
        return clip(msg)
    for key in ("stderr", "module_stderr", "stdout", "module_stdout", "censored"):
        text = res.get(key)
        if isinstance(text, str) and text.strip():
            return clip(text.strip())
    if msg is not None:
        return clip(json.dumps(msg, default=str))
    shown = {k: v for k, v in res.items() if not k.startswith("_") and k != "invocation"}
    return clip(json.dumps(shown, sort_keys=True, default=str)) if shown else errors.UNKNOWN_FAILURE


def _debug_output(res: Any) -> Any:
    if not isinstance(res, Mapping):
        return res
    if "msg" in res:
        return res["msg"]
    shown = {
        k: v for k, v in res.items() if not k.startswith("_") and k not in ("changed", "failed")
    }
    return shown


def clip(text: str) -> str:
    """``text`` cut to the length a status message may take."""
    if len(text) <= _MESSAGE_LIMIT:
        return text
    return text[: _MESSAGE_LIMIT - 1] + "…"
