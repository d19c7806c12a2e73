"""Structured logging: one JSON object per line, or a human-readable console form.

Every reconcile binds its identity (reconcile id, kind, namespace, name) with
:func:`bind`, so each line a reconcile or its Ansible run emits can be traced
back to the custom resource. Extra fields are passed with ``extra={...}``.

The knobs are controller-runtime's zap flags, as ansible-operator takes them
(:func:`zap_level`, :func:`zap_stacktrace_level`, ``--zap-time-encoding``). Blocks
of raw Ansible output (the PLAY RECAP after each run, the whole output with
``ANSIBLE_DEBUG_LOGS``) go to standard output as ansible-operator prints them
(:func:`print_block`); log lines go to standard error. A line carrying the
:data:`ONCE` field is written once per process per value: Ansible repeats a
deprecation warning in every run, the log shows it once.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import traceback
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any


class LogFormat(Enum):
    """How log lines are written (``--zap-encoder``)."""

    JSON = "json"
    CONSOLE = "console"


class TimeEncoding(Enum):
    """How log lines stamp their time: zap's ``--zap-time-encoding`` values."""

    EPOCH = "epoch"  # seconds since 1970, a float
    MILLIS = "millis"  # milliseconds since 1970, a float
    NANO = "nano"  # nanoseconds since 1970, an integer
    ISO8601 = "iso8601"  # 2006-01-02T15:04:05.000Z
    RFC3339 = "rfc3339"  # 2006-01-02T15:04:05Z
    RFC3339NANO = "rfc3339nano"  # 2006-01-02T15:04:05.999999999Z


#: zap's level names (``--zap-log-level``); ``warn``/``warning`` are ours besides.
_ZAP_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "panic": logging.CRITICAL,
}
#: A line whose ``extra`` holds this field is written once per process per distinct value
#: (Ansible's warnings, which every run repeats); fields starting with "_" are not shown.
ONCE = "_once"
#: zap's ``--zap-stacktrace-level`` names.
_STACKTRACE_LEVELS = {"info": logging.INFO, "error": logging.ERROR, "panic": logging.CRITICAL}

# Attributes every LogRecord has; anything else on a record came from `extra`.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    found = {
        k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")
    }
    # BoundLogger nests its fields so names like "name" cannot clash with LogRecord's own.
    nested = found.pop("fields", None)
    if isinstance(nested, dict):
        found.update((k, v) for k, v in nested.items() if not str(k).startswith("_"))
    return found


def _once_key(record: logging.LogRecord) -> Any:
    nested = getattr(record, "fields", None)
    if isinstance(nested, dict) and ONCE in nested:
        return nested[ONCE]
    return getattr(record, ONCE, None)


class _OncePerProcess(logging.Filter):
    """Drops a line whose ``_once`` value was logged before (see :data:`ONCE`)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[Any] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = _once_key(record)
        if key is None:
            return True
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
        return True


def zap_level(text: str) -> int:
    """A ``--zap-log-level`` value as a logging level.

    zap's names (``debug``, ``info``, ``error``, ``panic``; ``warning`` too), or an
    integer > 0: the logr verbosity, where 1 is ``debug`` and each step above is
    one level more verbose than the last (2 adds the HTTP client's connection
    lines, see :func:`setup`).
    """
    named = _ZAP_LEVELS.get(text.lower())
    if named is not None:
        return named
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(
            f"invalid log level {text!r}: one of debug, info, error, panic, or an integer > 0"
        )
    return max(1, logging.DEBUG + 1 - number)


def zap_stacktrace_level(text: str) -> int:
    """A ``--zap-stacktrace-level`` value (``info``, ``error`` or ``panic``) as a logging level."""
    level = _STACKTRACE_LEVELS.get(text.lower())
    if level is None:
        raise ValueError(f"invalid stacktrace level {text!r}: one of info, error, panic")
    return level


def level_name(levelno: int) -> str:
    """zap's name for a level (``warn``, ``panic``; ``Level(-2)`` for verbosity 2)."""
    if levelno < logging.DEBUG:
        return f"Level(-{logging.DEBUG + 1 - levelno})"
    if levelno >= logging.CRITICAL:
        return "panic"
    if levelno >= logging.WARNING and levelno < logging.ERROR:
        return "warn"
    return logging.getLevelName(levelno).lower()


def _stamp(created: float, encoding: TimeEncoding) -> float | int | str:
    """``created`` (seconds since 1970) as zap's time encoders write it, in UTC."""
    enc = TimeEncoding
    if encoding is enc.EPOCH:
        return created
    if encoding is enc.MILLIS:
        return created * 1000.0
    if encoding is enc.NANO:
        return int(created * 1_000_000_000)
    moment = datetime.fromtimestamp(created, UTC)
    if encoding is enc.RFC3339:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if encoding is enc.RFC3339NANO:
        fraction = f"{moment.microsecond:06d}".rstrip("0")
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class _Formatter(logging.Formatter):
    def __init__(
        self,
        *,
        time_encoding: TimeEncoding = TimeEncoding.ISO8601,
        stacktrace_level: int | None = None,
    ) -> None:
        super().__init__()
        self.time_encoding = time_encoding
        self.stacktrace_level = stacktrace_level

    def stacktrace(self, record: logging.LogRecord) -> str | None:
        """Where the line was logged from, as zap's ``stacktrace`` field (see
        ``--zap-stacktrace-level``): the caller's stack, without logging's own frames."""
        if self.stacktrace_level is None or record.levelno < self.stacktrace_level:
            return None
        frames = [
            frame
            for frame in traceback.extract_stack()
            if "/logging/" not in frame.filename and frame.filename != __file__
        ]
        return "".join(traceback.format_list(frames)).rstrip()


class JsonFormatter(_Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _stamp(record.created, self.time_encoding),
            "level": level_name(record.levelno),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        stack = self.stacktrace(record)
        if stack is not None:
            line["stacktrace"] = stack
        return json.dumps(line, default=str)


class ConsoleFormatter(_Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp: float | int | str = datetime.fromtimestamp(record.created, UTC).strftime(
            "%H:%M:%S.%f"
        )[:-3]
        if self.time_encoding is not TimeEncoding.ISO8601:
            stamp = _stamp(record.created, self.time_encoding)
        extras = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        level = level_name(record.levelno).upper()
        text = f"{stamp} {level:<5} {record.name}: {record.getMessage()}"
        if extras:
            text += f"  {extras}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        stack = self.stacktrace(record)
        if stack is not None:
            text += "\n" + stack
        return text


def setup(
    *,
    fmt: LogFormat,
    level: int,
    time_encoding: TimeEncoding = TimeEncoding.ISO8601,
    stacktrace_level: int | None = None,
) -> None:
    """Send log lines to standard error in ``fmt``, from ``level`` up (see :func:`zap_level`)."""
    handler = logging.StreamHandler(sys.stderr)
    kind = JsonFormatter if fmt is LogFormat.JSON else ConsoleFormatter
    handler.setFormatter(kind(time_encoding=time_encoding, stacktrace_level=stacktrace_level))
    handler.addFilter(_OncePerProcess())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # urllib3 logs every connection at DEBUG: noise for operator authors at ``debug``,
    # shown from the next verbosity step (``--zap-log-level=2``) on.
    logging.getLogger("urllib3").setLevel(logging.WARNING if level >= logging.DEBUG else level)


def print_block(*, title: str, text: str) -> None:
    """Print raw Ansible output framed as ansible-operator does, on standard output.

    One write per block, so blocks of runs finishing at once never interleave.
    """
    sys.stdout.write(f"\n----- {title:>70} -----\n\n{text}\n\n----------\n")
    sys.stdout.flush()


def play_recap(output: str) -> str:
    """The PLAY RECAP at the end of a run's output ("" if the run never got there)."""
    start = output.rfind("PLAY RECAP")
    return output[start:].rstrip() if start >= 0 else ""


class BoundLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger carrying fixed fields; per-call ``extra`` is merged over them."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        bound = dict(self.extra or {})
        bound.update(kwargs.get("extra") or {})
        kwargs["extra"] = {"fields": bound}
        return msg, kwargs


def bind(logger: logging.Logger | BoundLogger, **fields: Any) -> BoundLogger:
    if isinstance(logger, BoundLogger):
        merged: Mapping[str, Any] = {**(logger.extra or {}), **fields}
        return BoundLogger(logger.logger, merged)
    return BoundLogger(logger, fields)
