"""OLM spec and status descriptors: how the OperatorHub console shows a kind's fields.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``generate csv``
writes one spec descriptor per argument-spec option (nested dict options as dotted paths)
and one status descriptor per status field the CRD describes, with the conditions the
runner writes. The x-descriptors follow the option's type: ``podCount`` for size-like
integers (size, replicas, a ``*_size`` or ``*_replicas``), ``number`` for other integers,
``booleanSwitch``, ``select:<choice>`` for choices, ``text`` for strings,
``resourceRequirements`` for a ``resources`` dict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from runner.tools.publish.argspecs import Option

Descriptor = dict[str, Any]

_UI = "urn:alm:descriptor:com.tectonic.ui:"
CONDITIONS = "urn:alm:descriptor:io.kubernetes.conditions"
_SIZE_NAMES = frozenset({"size", "replicas", "replica_count", "replicas_count", "pod_count"})


def display_name(field: str) -> str:
    """``maxConnections`` → ``Max Connections``; ``memoryLimitMB`` → ``Memory Limit MB``."""
    words: list[str] = []
    current = ""
    for index, char in enumerate(field):
        following = field[index + 1] if index + 1 < len(field) else ""
        starts = char.isupper() and current and (not current[-1].isupper() or following.islower())
        if char in "_-" or starts:
            if current:
                words.append(current)
            current = "" if char in "_-" else char
        else:
            current += char
    if current:
        words.append(current)
    return " ".join(w[:1].upper() + w[1:] for w in words)


def size_like(name: str) -> bool:
    return name in _SIZE_NAMES or name.endswith(("_size", "_replicas"))


def x_descriptors(option: Option) -> list[str]:
    if option.choices and option.type != "list":
        return [f"{_UI}select:{choice}" for choice in option.choices]
    if option.type == "int":
        return [f"{_UI}podCount" if size_like(option.name) else f"{_UI}number"]
    if option.type == "bool":
        return [f"{_UI}booleanSwitch"]
    if option.type in ("str", "path", "float"):
        return [f"{_UI}text"]
    if option.type == "dict" and option.name == "resources":
        return [f"{_UI}resourceRequirements"]
    return []


def spec_descriptors(options: tuple[Option, ...], *, prefix: str = "") -> Iterator[Descriptor]:
    """One descriptor per option, nested dict options after their parent."""
    for option in options:
        path = f"{prefix}{option.field}"
        descriptor: Descriptor = {"displayName": display_name(option.field), "path": path}
        if option.description:
            descriptor["description"] = option.description
        found = x_descriptors(option)
        if found:
            descriptor["x-descriptors"] = found
        yield descriptor
        if option.type == "dict" and option.options and option.name != "resources":
            yield from spec_descriptors(option.options, prefix=f"{path}.")


def status_descriptors(status: Mapping[str, Any] | None) -> Iterator[Descriptor]:
    """The conditions, then every status field the CRD's schema describes."""
    yield {
        "displayName": "Conditions",
        "path": "conditions",
        "description": "The operator's conditions (Running, Successful, Failure) and the role's.",
        "x-descriptors": [CONDITIONS],
    }
    properties = (status or {}).get("properties") or {}
    for field, schema in properties.items():
        if field == "conditions" or not isinstance(schema, Mapping):
            continue
        descriptor: Descriptor = {"displayName": display_name(field), "path": field}
        if schema.get("description"):
            descriptor["description"] = " ".join(str(schema["description"]).split())
        if schema.get("type") == "integer":
            snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in field)
            pods = size_like(snake) or snake.endswith(("_replicas", "ready_replicas"))
            descriptor["x-descriptors"] = [f"{_UI}podCount" if pods else f"{_UI}number"]
        elif schema.get("type") == "string":
            descriptor["x-descriptors"] = [f"{_UI}text"]
        yield descriptor
