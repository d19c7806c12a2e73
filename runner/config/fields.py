"""Reading one field of a watches.yaml entry: its type, its unknown keys, the error naming it.

Every key of an entry (and of its ``finalizer``, ``blacklist`` items, webhooks) is read
through these checks, so every mistake is reported alike: a
:class:`~runner.base.errors.WatchesError` naming the file, the entry (counted from 1),
its group/version/kind once known, and the field (Kubernetes field-path style, list items
counted from 0), with what was expected and what was seen. An absent or null key reads as
None, as operator-sdk reads it; what to do with None is the caller's.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from runner.base import errors
from runner.config import durations

T = TypeVar("T")

#: Keys operator-sdk's Watch has but never reads from the file (``yaml:"-"``).
_FLAG_ONLY = {
    "maxConcurrentReconciles": ("--max-concurrent-reconciles", "MAX_CONCURRENT_RECONCILES"),
    "ansibleVerbosity": ("--ansible-verbosity", "ANSIBLE_VERBOSITY"),
}
_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", dict: "a mapping"}
_TYPE_NAMES.update({list: "a list", float: "a number", type(None): "null"})


@dataclass(frozen=True)
class Where:
    """The entry being read, to name in errors."""

    path: Path
    entry: int
    gvk: str | None = None

    def error(self, field: str | None, problem: str) -> errors.WatchesError:
        return errors.WatchesError(
            path=str(self.path), entry=self.entry, field=field, problem=problem, gvk=self.gvk
        )


def get(
    raw: Mapping[str, Any], key: str, kind: type[T], *, where: Where, prefix: str = ""
) -> T | None:
    """``raw[key]`` if it is a ``kind``; None when absent or null, as operator-sdk reads it."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise where.error(prefix + key, f"expected {_TYPE_NAMES[kind]}, saw {describe(value)}")
    return value


def flag(raw: Mapping[str, Any], key: str, *, default: bool, where: Where) -> bool:
    value = get(raw, key, bool, where=where)
    return default if value is None else value


def duration(raw: Mapping[str, Any], key: str, *, where: Where) -> float | None:
    """A Go duration key (``reconcilePeriod``, ``reconcileTimeout``); absent or zero is
    None: the flag's value applies (operator-sdk's reading of ``reconcilePeriod``)."""
    value = raw.get(key)
    if value is None or (type(value) is int and value == 0):
        return None
    if not isinstance(value, str):
        hint = f"; write '{value}s' for seconds" if type(value) is int else ""
        problem = f"expected a Go duration such as '30s' or '1h2m', saw {describe(value)}{hint}"
        raise where.error(key, problem)
    try:
        seconds = durations.parse(value)
    except ValueError as e:
        raise where.error(key, str(e)) from e
    if seconds < 0:
        raise where.error(key, f"must not be negative, saw {value!r}")
    return seconds or None  # operator-sdk only overrides the flag with a non-zero period


def variables(raw: Mapping[str, Any], *, where: Where, prefix: str) -> Mapping[str, Any]:
    """``vars``: a mapping with string keys, read-only; empty when absent."""
    value = get(raw, "vars", dict, where=where, prefix=prefix) or {}
    for key in value:
        if not isinstance(key, str):
            raise where.error(f"{prefix}vars", f"keys must be strings, saw {describe(key)}")
    return MappingProxyType(value)


def check_keys(raw: Mapping[Any, Any], known: Sequence[str], *, where: Where, prefix: str) -> None:
    """Refuse the first key not in ``known``, with the closest known one as a hint."""
    for key in raw:
        if key in known:
            continue
        if not prefix and key in _FLAG_ONLY:
            option, variable = _FLAG_ONLY[key]
            problem = f"not read from watches.yaml; use {option} or {variable}_<KIND>_<GROUP>"
            raise where.error(prefix + key, problem)
        lowered = {name.lower(): name for name in known}
        close = difflib.get_close_matches(str(key).lower(), list(lowered), n=1)
        hint = (
            f"did you mean {lowered[close[0]]!r}?"
            if close
            else f"expected one of {', '.join(known)}"
        )
        raise where.error(prefix + str(key), f"unknown key; {hint}")


def label(group: object, version: object, kind: object) -> str | None:
    """``group/version/kind`` to name an entry by, once its version and kind are known."""
    if not (isinstance(version, str) and version and isinstance(kind, str) and kind):
        return None
    return f"{group}/{version}/{kind}" if isinstance(group, str) and group else f"{version}/{kind}"


def describe(value: object) -> str:
    """What was seen, for an error: its YAML type and, shortened, its value."""
    kind = _TYPE_NAMES.get(type(value), type(value).__name__)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return kind if value is None else f"{kind} {shown}"
