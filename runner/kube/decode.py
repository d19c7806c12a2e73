"""JSON decoding that one malformed object cannot defeat.

The API server accepts objects nested up to 10000 levels; ``json.loads`` gives
up near 1000 (``RecursionError``). Decoding a LIST or a watch line whole would
then fail for every object in it, and an informer retrying the same list or
resourceVersion would never see another event of that kind. So:

- The fast path stays ``json.loads`` of the whole answer.
- Only if it fails, :func:`listing` finds each item's span with an iterative
  scanner and decodes every item on its own with ``json.loads``: an item fails
  here exactly when it would fail alone. :func:`event` does the same for one
  watch line.
- What cannot be decoded becomes a :class:`Rejected`: the object as read by
  :func:`parse`, an iterative decoder that keeps :data:`RECOVER_DEPTH` levels
  (metadata, status conditions) and puts a :class:`Truncated` marker in place
  of anything deeper, plus the reason. A rejected object is for naming and
  reporting only; it never reaches a handler or a cache.
- An object that did decode but nests deeper than the runtime above holds (it
  says how deep: ``runner.watch.strings``) becomes a :class:`Rejected` too, by
  :func:`too_deep`, which keeps its top levels the same way, without recursion.

Part of :mod:`runner.kube`: it knows nothing of the runtime above it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runner.kube import errors
from runner.kube.types import KubeObject, WatchEvent

#: Levels a recovered object keeps: enough for metadata, ownerReferences and
#: status conditions, shallow enough for any recursive code that reads it.
RECOVER_DEPTH = 32

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# Tokens that matter when skipping a subtree: whole strings (escapes included) and brackets.
_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_LITERALS = {"true": True, "false": False, "null": None}
# json's own string scanner (C): not in typeshed, but public since Python 2.6.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class DecodeError(errors.KubeError, ValueError):
    """An answer that is not JSON the runtime can decode (a ``ValueError`` too, as
    ``json.loads``' own errors are, so callers catching those still do)."""


@dataclass(frozen=True)
class Truncated:
    """Stands for a container nested deeper than :func:`parse` kept.

    Not JSON: ``json.dumps`` refuses it, so a recovered object cannot be sent on
    by mistake. ``start``/``end`` delimit its text in what was parsed (``-1``: it
    was cut from a value already decoded, by :func:`too_deep`).
    """

    start: int
    end: int
    depth: int  # levels of nesting inside it, itself included


@dataclass(frozen=True)
class Rejected:
    """An object that could not be decoded: what could be read of it, and why.

    ``obj`` holds the top :data:`RECOVER_DEPTH` levels (``{}`` if nothing could
    be read); deeper subtrees are :class:`Truncated`. ``type`` is the watch
    event's type, ``""`` for a list item.
    """

    obj: KubeObject
    reason: str
    type: str = ""


@dataclass(frozen=True)
class Listing:
    """A decoded LIST answer: its metadata, the items that decoded, those that did not."""

    metadata: dict[str, Any]
    items: list[KubeObject]
    rejected: list[Rejected]


def loads(data: bytes | str) -> Any:
    """``json.loads``, with a nesting too deep reported as :class:`DecodeError`."""
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise DecodeError(f"JSON nested too deep to decode ({_depth_of(data)} levels)") from exc


def listing(data: bytes) -> Listing:
    """Decode a LIST answer; items that cannot be decoded are :attr:`Listing.rejected`.

    Raises :class:`DecodeError` only if the list itself (not one item) is unreadable.
    """
    try:
        doc = json.loads(data)
    except (RecursionError, ValueError) as exc:
        return _listing_item_by_item(data, exc)
    if not isinstance(doc, dict):
        raise DecodeError(f"a list answer is a JSON {type(doc).__name__}, not an object")
    return Listing(metadata=_dict(doc.get("metadata")), items=doc.get("items") or [], rejected=[])


def event(line: bytes) -> WatchEvent | Rejected:
    """Decode one watch line; an undecodable one becomes :class:`Rejected`."""
    try:
        decoded = json.loads(line)
    except (RecursionError, ValueError) as exc:
        first: Exception = exc
    else:
        if isinstance(decoded, dict):
            return decoded  # type: ignore[return-value]  # the API server's own shape
        return Rejected(obj={}, reason=f"a watch line is a JSON {type(decoded).__name__}")
    text = line.decode("utf-8", "surrogateescape")
    try:
        doc, deepest = parse(text, max_depth=RECOVER_DEPTH + 1)  # +1: the event around it
    except ValueError as exc:
        return Rejected(obj={}, reason=f"not JSON: {exc}")
    doc = _dict(doc)
    return Rejected(
        obj=_dict(doc.get("object")),
        reason=_reason(first, depth=deepest - 1),
        type=str(doc.get("type", "")),
    )


def intact(value: Any) -> bool:
    """Whether ``value`` (from :func:`parse`) holds no :class:`Truncated` marker."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Truncated):
            return False
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return True


def too_deep(value: Any, *, limit: int, type: str = "") -> Rejected:
    """A decoded object nested deeper than ``limit`` levels, which the runtime above
    does not hold, as a :class:`Rejected` naming its depth; without recursion."""
    obj, deepest = _trim(value, max_depth=RECOVER_DEPTH)
    return Rejected(
        obj=_dict(obj),
        reason=f"nesting {deepest} levels deep, deeper than the runtime holds ({limit} at most)",
        type=type,
    )


def parse(text: str, *, max_depth: int) -> tuple[Any, int]:
    """Decode ``text`` without recursion; return the value and its deepest nesting.

    Containers below ``max_depth`` levels are skipped (their brackets counted,
    strings stepped over) and replaced by :class:`Truncated`. Control characters
    in strings are accepted and huge integers become floats: this reads what
    ``json.loads`` refused, to name it. Raises ``ValueError`` on broken syntax.
    """
    stack: list[dict[str, Any] | list[Any]] = []
    keys: list[str] = []  # the pending key of each open object (lists hold "")
    deepest = 0
    pos = _ws(text, 0)
    while True:
        value, pos, depth = _value(text, pos, level=len(stack), max_depth=max_depth)
        deepest = max(deepest, depth)
        if value is _OPEN:
            opener = text[pos - 1]
            stack.append({} if opener == "{" else [])
            keys.append("")
            pos = _ws(text, pos)
            if text.startswith("}" if opener == "{" else "]", pos):
                pos += 1
                value = stack.pop()
                keys.pop()
            elif opener == "{":
                keys[-1], pos = _key(text, pos)
                continue
            else:
                continue
        # A value is complete: put it in its container, then read "," or the closer.
        while True:
            if not stack:
                end = _ws(text, pos)
                if end != len(text):
                    raise ValueError(f"extra data at {end}")
                return value, deepest
            parent = stack[-1]
            if isinstance(parent, dict):
                parent[keys[-1]] = value
            else:
                parent.append(value)
            pos = _ws(text, pos)
            closer = "}" if isinstance(parent, dict) else "]"
            if text.startswith(",", pos):
                pos = _ws(text, pos + 1)
                if isinstance(parent, dict):
                    keys[-1], pos = _key(text, pos)
                break
            if text.startswith(closer, pos):
                pos += 1
                value = stack.pop()
                keys.pop()
                continue
            raise ValueError(f"expected ',' or {closer!r} at {pos}")


# -- internals ----------------------------------------------------------------

_OPEN = object()  # _value's answer for a container to descend into


def _value(text: str, pos: int, *, level: int, max_depth: int) -> tuple[Any, int, int]:
    """The value at ``pos``: (value or _OPEN, end, nesting depth seen)."""
    char = text[pos : pos + 1]
    if char in ("{", "["):
        if level >= max_depth:
            end, depth = _skip(text, pos)
            return Truncated(start=pos, end=end, depth=depth), end, level + depth
        return _OPEN, pos + 1, level + 1
    if char == '"':
        string, end = _scanstring(text, pos + 1, False)
        return string, end, level
    number = _NUMBER.match(text, pos)
    if number and number.end() > pos:
        whole, fraction, exponent = number.groups()
        if fraction or exponent:
            return float(number.group()), number.end(), level
        try:
            return int(whole), number.end(), level
        except ValueError:  # more digits than int() converts
            return float(whole), number.end(), level
    for word, literal in _LITERALS.items():
        if text.startswith(word, pos):
            return literal, pos + len(word), level
    raise ValueError(f"unexpected {char!r} at {pos}")


def _ws(text: str, pos: int) -> int:
    """Past the whitespace at ``pos``."""
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _key(text: str, pos: int) -> tuple[str, int]:
    if not text.startswith('"', pos):
        raise ValueError(f"expected a key at {pos}")
    key, pos = _scanstring(text, pos + 1, False)
    pos = _ws(text, pos)
    if not text.startswith(":", pos):
        raise ValueError(f"expected ':' at {pos}")
    return key, _ws(text, pos + 1)


def _skip(text: str, pos: int) -> tuple[int, int]:
    """End of the container opening at ``pos``, and how deep it nests."""
    depth = deepest = 0
    for token in _SKIP.finditer(text, pos):
        char = token.group()[0]
        if char == '"':
            continue
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
            if depth == 0:
                return token.end(), deepest
    raise ValueError(f"unterminated container from {pos}")


def _trim(value: Any, *, max_depth: int) -> tuple[Any, int]:
    """``value`` with the containers below ``max_depth`` levels replaced by
    :class:`Truncated`, and its deepest nesting (as :func:`parse` counts it)."""
    if not isinstance(value, dict | list):
        return value, 0
    root: Any = {} if isinstance(value, dict) else []
    pending: list[tuple[Any, Any, int]] = [(value, root, 1)]  # (source, copy, level)
    deepest = 1
    while pending:
        source, copy, level = pending.pop()
        entries = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in entries:
            if isinstance(item, dict | list):
                if level >= max_depth:
                    depth = nesting(item)
                    deepest = max(deepest, level + depth)
                    child: Any = Truncated(start=-1, end=-1, depth=depth)
                else:
                    child = {} if isinstance(item, dict) else []
                    deepest = max(deepest, level + 1)
                    pending.append((item, child, level + 1))
            else:
                child = item
            if isinstance(copy, dict):
                copy[key] = child
            else:
                copy.append(child)
    return root, deepest


def nesting(value: Any, *, limit: int | None = None) -> int:
    """Levels of containers in ``value``, itself included (a scalar is 0); without
    recursion, so an object of any depth can be measured. With ``limit``, counting stops
    once past it (the result is then ``limit + 1`` or more)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, Mapping | list):
            deepest = max(deepest, level)
            if limit is not None and deepest > limit:
                return deepest
            children = item.values() if isinstance(item, Mapping) else item
            pending.extend((child, level + 1) for child in children)
    return deepest


def _listing_item_by_item(data: bytes, failure: Exception) -> Listing:
    # surrogateescape keeps undecodable bytes, so each item's bytes can be restored
    # and decoded alone exactly as json.loads would have met them.
    text = data.decode("utf-8", "surrogateescape")
    try:
        doc, _ = parse(text, max_depth=2)  # the list, its metadata and items; each item skipped
    except ValueError as exc:
        raise DecodeError(f"a list answer is not JSON ({failure}): {exc}") from exc
    if not isinstance(doc, dict):
        raise DecodeError(f"a list answer is not a JSON object ({failure})")
    raw_items = doc.get("items")
    items: list[KubeObject] = []
    rejected: list[Rejected] = []
    for raw in raw_items if isinstance(raw_items, list) else []:
        if not isinstance(raw, Truncated):
            rejected.append(Rejected(obj={}, reason=f"a list item is a {type(raw).__name__}"))
            continue
        item_text = text[raw.start : raw.end]
        try:
            items.append(json.loads(item_text.encode("utf-8", "surrogateescape")))
        except (RecursionError, ValueError) as exc:
            rejected.append(_recover(item_text, exc))
    return Listing(metadata=_dict(doc.get("metadata")), items=items, rejected=rejected)


def _recover(text: str, failure: Exception) -> Rejected:
    try:
        obj, deepest = parse(text, max_depth=RECOVER_DEPTH)
    except ValueError as exc:
        return Rejected(obj={}, reason=f"not JSON: {exc}")
    return Rejected(obj=_dict(obj), reason=_reason(failure, depth=deepest))


def _reason(failure: Exception, *, depth: int) -> str:
    if isinstance(failure, RecursionError):
        return f"nesting {depth} levels deep, deeper than the runtime can decode"
    return f"invalid JSON: {failure}"


def _depth_of(data: bytes | str) -> int:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return 0
    try:
        return _skip(text, start)[1]
    except ValueError:
        return 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
