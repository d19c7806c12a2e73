"""Keeping a Secret's data out of what a run's events feed: logs, artifacts, previews.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status), used
by :class:`runner.ansible.events.Tally` on each job event before anything reads
it. ansible-runner censors ``no_log`` tasks only; a role that reads a Secret
without it (``k8s_info``, a ``k8s`` result or definition) shows its data in the
event's result and in the output Ansible printed for it. :func:`secrets` replaces,
in place, the ``data``/``stringData`` values of every Secret in an event —
``kind: Secret``, a Secret-shaped item, or any item a task for ``kind: Secret``
listed — and collects them (and the decoded text of ``data``); :func:`scrub`
cuts the collected values from every string of the event and of the run's later
events. Values shorter than :data:`MIN_SCRUBBED` characters are replaced only
where they sit in a Secret.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

#: What stands in for a Secret's value in events, logs and artifacts.
REDACTED = "<redacted>"
#: Shorter Secret values are not cut from free text: "1" or "true" would mangle it.
MIN_SCRUBBED = 4
_SECRET_FIELDS = ("data", "stringData")


def secrets(data: dict[str, Any], *, found: set[str]) -> None:
    """Redact, in place, every Secret in an event's ``event_data``; add its values
    to ``found``."""
    _redact(data, found=found, secret=_lists_secrets(data))


def scrub(value: Any, needles: Iterable[str]) -> Any:
    """``value`` (changed in place where it is a list or dict) with each needle in its
    strings and keys replaced by :data:`REDACTED`, longest needles first."""
    return _scrub(value, sorted(needles, key=len, reverse=True))


def _lists_secrets(data: Mapping[str, Any]) -> bool:
    """Whether the event is a ``k8s_info`` (or similar) task for ``kind: Secret``: its
    result lists Secrets whose items name no kind."""
    res = data.get("res")
    invocation = res.get("invocation") if isinstance(res, Mapping) else None
    args = invocation.get("module_args") if isinstance(invocation, Mapping) else None
    for source in (args, data.get("task_args")):
        if isinstance(source, Mapping) and str(source.get("kind", "")).lower() == "secret":
            return True
    return False


def _is_secret(value: Mapping[str, Any]) -> bool:
    if value.get("kind") == "Secret":
        return True
    # An item of a Secret list: metadata and a type, and data where a Secret keeps it.
    return (
        "kind" not in value
        and isinstance(value.get("metadata"), Mapping)
        and isinstance(value.get("type"), str)
        and any(isinstance(value.get(f), Mapping) for f in _SECRET_FIELDS)
    )


def _redact(value: Any, *, found: set[str], secret: bool) -> None:
    """Walk ``value``; in each Secret (and, with ``secret``, each item of a listing
    under ``resources``) replace the data's values, collecting them into ``found``."""
    if isinstance(value, list):
        for item in value:
            _redact(item, found=found, secret=secret)
        return
    if not isinstance(value, dict):
        return
    if _is_secret(value) or (secret and "metadata" in value):
        for name in _SECRET_FIELDS:
            fields = value.get(name)
            if isinstance(fields, dict):
                for key, item in fields.items():
                    _remember(item, encoded=name == "data", found=found)
                    fields[key] = REDACTED
    for item in value.values():
        _redact(item, found=found, secret=secret)


def _remember(value: Any, *, encoded: bool, found: set[str]) -> None:
    if not isinstance(value, str) or value == REDACTED:
        return
    texts = [value]
    if encoded:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            texts.append(base64.b64decode(value, validate=True).decode("utf-8"))
    for text in texts:
        if len(text) >= MIN_SCRUBBED:
            found.add(text)
            escaped = json.dumps(text)[1:-1]  # as it shows in JSON output
            if escaped != text:
                found.add(escaped)


def _scrub(value: Any, needles: list[str]) -> Any:
    if isinstance(value, str):
        for needle in needles:
            if needle in value:
                value = value.replace(needle, REDACTED)
        return value
    if isinstance(value, list):
        value[:] = [_scrub(item, needles) for item in value]
        return value
    if isinstance(value, dict):
        for key in list(value):
            item = _scrub(value.pop(key), needles)
            value[_scrub(key, needles) if isinstance(key, str) else key] = item
        return value
    return value
