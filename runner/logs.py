"""Structured logging: one JSON object per line, or a human-readable console form.

Every reconcile binds its identity (reconcile id, kind, namespace, name) with
:func:`bind`, so each line a reconcile or its Ansible run emits can be traced
back to the custom resource. Extra fields are passed with ``extra={...}``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

from runner import settings as settings_mod

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
        found.update(nested)
    return found


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
        extras = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        text = f"{stamp} {record.levelname:<5} {record.name}: {record.getMessage()}"
        if extras:
            text += f"  {extras}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup(*, fmt: settings_mod.LogFormat, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt is settings_mod.LogFormat.JSON else ConsoleFormatter()
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # urllib3 logs every retry/connection at DEBUG; it is noise for operator authors.
    logging.getLogger("urllib3").setLevel(logging.WARNING)


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
