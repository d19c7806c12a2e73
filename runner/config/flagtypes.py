"""The value types of ``playbook-operator``'s flags: text in, a checked value out.

argparse calls them as a flag's ``type=``; an ``ArgumentTypeError`` becomes its usage
error (``argument --flag: expected ...``). Booleans take Go's spellings (``--flag=false``),
durations Go's (``10h``), log levels zap's. :mod:`runner.config.flags` uses them for
``run``; the ``init`` and ``create`` commands take :func:`boolean` too.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from runner.base import logs
from runner.config import durations, quantity, sections


def boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "t", "true", "yes"):
        return True
    if lowered in ("0", "f", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def duration(text: str) -> float:
    try:
        return durations.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def size(text: str) -> int:
    """Bytes, written as a Kubernetes quantity (``512Mi``, ``2Gi``, ``1048576``)."""
    try:
        return quantity.parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def count(text: str) -> int:
    """A whole number >= 0 (0: the limit is off)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def log_events(text: str) -> sections.LogEvents:
    for choice in sections.LogEvents:
        if choice.value.lower() == text.lower():  # ansible-operator ignores case
            return choice
    raise argparse.ArgumentTypeError(
        f"expected Tasks, Everything, Nothing or Changes, got {text!r}"
    )


def zap(parse: Callable[[str], int]) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return convert


def time_encoding(text: str) -> logs.TimeEncoding:
    try:
        return logs.TimeEncoding(text.lower())
    except ValueError:
        names = ", ".join(e.value for e in logs.TimeEncoding)
        raise argparse.ArgumentTypeError(f"expected one of {names}, got {text!r}") from None
