"""CR data is never code: the checks every extra-vars document passes before it is written.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status). ansible-core
reads the extra-vars file (``-e @env/extravars``) with its JSON decoder, and that decoder
treats three mapping keys as typed values rather than data: ``__ansible_unsafe`` (a
string never templated), ``__ansible_vault`` (a ciphertext the operator would decrypt)
and ``__ansible_type`` (a serialized Ansible object). Worse, when the JSON decoder fails
for any reason (a malformed tag, a string that is not valid UTF-8, nesting deeper than
its recursion allows — about 200 levels on 2.19 and 2.21) ansible-core silently reads the
whole file again as YAML, where no ``__ansible_unsafe`` wrapper counts any more and every
``{{ … }}`` written into a CR renders.

So the document is checked in its final form — after snake-casing, unsafe wrapping and
JSON encoding, on the very text that is written:

- no mapping key, compared case-insensitively, starts with ``__ansible`` except the
  runtime's own wrappers, which are exactly ``{"__ansible_unsafe": <string>}``;
- every string (keys included) encodes as UTF-8;
- no value is nested deeper than :data:`MAX_DEPTH`.

:func:`dumps` refuses a document that fails (:class:`~runner.base.errors.UnsafeVariablesError`);
:mod:`runner.ansible.extravars` drops offending CR keys first and reports them, so the
refusal only fires on a bug, a watch var or an over-deep CR.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from runner.base import errors
from runner.kube import decode

#: Keys starting with this (in any case) are type tags to ansible-core's JSON decoder.
TAG_PREFIX = "__ansible"
#: The one tag the runtime writes itself: a string Ansible never templates.
UNSAFE_KEY = "__ansible_unsafe"
#: Deepest nesting written. ansible-core's decoder recurses per level and falls back to
#: YAML past ~200 levels; real objects stay under 30 (a pod template in a CR is ~15).
MAX_DEPTH = 100


def is_tag_key(key: object) -> bool:
    """True when ``key`` (in any case, after leading blanks) would be an Ansible type tag."""
    return isinstance(key, str) and key.lstrip().lower().startswith(TAG_PREFIX)


def is_wrapper(value: Mapping[Any, Any]) -> bool:
    """True for the runtime's own unsafe wrapper: ``{"__ansible_unsafe": <string>}``."""
    return len(value) == 1 and isinstance(value.get(UNSAFE_KEY), str)


def unwrapped(value: Any) -> str | None:
    """Where in ``value`` a string is not inside an unsafe wrapper (``.a[0]``, or ``""``
    for ``value`` itself), or None when every string is wrapped."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            return path
        if isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, Mapping) and not is_wrapper(item):
            stack.extend((child, f"{path}.{key}") for key, child in item.items())
    return None


def check(document: Any) -> None:
    """Raise :class:`~runner.base.errors.UnsafeVariablesError` naming the first place where
    ``document`` (decoded JSON) would not reach Ansible as plain data."""
    if decode.nesting(document, limit=MAX_DEPTH) > MAX_DEPTH:
        raise errors.UnsafeVariablesError(f"the variables nest deeper than {MAX_DEPTH} levels")
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            _utf8(item, path=path)
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, Mapping):
            wrapper = is_wrapper(item)
            for key, child in item.items():
                where = f"{path}.{key}" if path else str(key)
                if not isinstance(key, str):
                    raise errors.UnsafeVariablesError(f"a mapping key is not a string at {where}")
                _utf8(key, path=where)
                if is_tag_key(key) and not wrapper:
                    raise errors.UnsafeVariablesError(f"an Ansible type tag is left at {where}")
                stack.append((child, where))


def dumps(document: Mapping[str, Any], *, default: Callable[[Any], Any] | None = None) -> str:
    """``document`` as the JSON text ansible-core will read, checked in that final form."""
    if decode.nesting(document, limit=MAX_DEPTH) > MAX_DEPTH:  # before encoding, which recurses
        raise errors.UnsafeVariablesError(f"the variables nest deeper than {MAX_DEPTH} levels")
    try:
        text = json.dumps(dict(document), default=default, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise errors.UnsafeVariablesError(f"the variables cannot be encoded: {exc}") from exc
    # The check reads the text back: what is judged is exactly what Ansible will read.
    check(json.loads(text))
    return text


def _utf8(text: str, *, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = path or "the top level"
        raise errors.UnsafeVariablesError(f"a string that is not valid UTF-8 at {where}") from exc
