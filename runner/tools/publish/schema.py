"""An ``openAPIV3Schema`` from a role's argument specs, merged into the CRD's current one.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``generate crd``
writes what the API server checks before a CR reaches the watch. The argument specs own
the spec's fields: their names, types, defaults, enums (from ``choices``), descriptions
and required fields; nested dicts through ``options``, lists of dicts through
``elements: dict``. ``x-kubernetes-preserve-unknown-fields`` appears only where the specs
leave a value open (a dict without ``options``, a ``raw`` or ``json`` option) and on
``status``, which roles write freely through ``k8s_status``. The status schema describes
the conditions the runner writes (operator-sdk's Running, Successful, Failure, with
``ansibleResult``) and any the role adds.

What argument specs cannot say stays in the CRD file and survives regeneration
(:func:`merge`): bounds, patterns, formats, CEL rules (``x-kubernetes-validations``),
list and map types, ``additionalProperties`` and int-or-string narrowing an open value,
extra ``required`` fields, the status fields the author describes, and descriptions of
options the specs leave undescribed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from runner.tools.publish.argspecs import EntryPoint, Option

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
# Keys the argument specs decide: the file's value of one of these is never kept.
OWNED = frozenset({"type", "default", "enum", "properties", "items", "required", PRESERVE})
# Keys of the file that describe an open value more narrowly than "anything".
NARROWING = frozenset({"additionalProperties", "x-kubernetes-int-or-string", "anyOf", "oneOf"})

_SCALARS = {"str": "string", "path": "string", "int": "integer", "float": "number"}
_SCALARS["bool"] = "boolean"
_OPEN = frozenset({"raw", "json", "jsonarg"})

CONDITIONS: Schema = {
    "description": (
        "Running, Successful and Failure, written by the operator about its last Ansible "
        "run (operator-sdk's Ansible operator conditions), and any the role writes."
    ),
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        # Conditions written by roles may carry more fields (observedGeneration).
        PRESERVE: True,
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "lastHeartbeatTime": {"type": "string", "format": "date-time"},
            "ansibleResult": {
                "description": "Task counts of the last Ansible run.",
                "type": "object",
                "properties": {
                    "ok": {"type": "integer"},
                    "changed": {"type": "integer"},
                    "skipped": {"type": "integer"},
                    "failures": {"type": "integer"},
                    "completion": {"type": "string"},
                },
            },
        },
    },
}


def status_schema(kind: str) -> Schema:
    return {
        "description": (
            f"The observed state of the {kind}: the operator's conditions, and whatever "
            "the role reports (unknown fields are kept)."
        ),
        "type": "object",
        PRESERVE: True,
        "properties": {"conditions": copy.deepcopy(CONDITIONS)},
    }


def spec_schema(entry: EntryPoint, *, kind: str) -> Schema:
    """The ``spec`` schema of the entry point's options."""
    node: Schema = {
        "description": entry.description
        or entry.short_description
        or f"The desired state of the {kind}.",
        "type": "object",
    }
    node.update(_object(entry.options))
    return node


def document(entry: EntryPoint, *, kind: str) -> Schema:
    """The whole ``openAPIV3Schema`` of one version of ``kind``."""
    return {
        "description": entry.short_description or f"{kind} is the Schema for its API.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema(entry, kind=kind),
            "status": status_schema(kind),
        },
    }


def _object(options: tuple[Option, ...]) -> Schema:
    if not options:
        return {PRESERVE: True}
    node: Schema = {"properties": {o.field: option_schema(o) for o in options}}
    required = [o.field for o in options if o.required]
    if required:
        node["required"] = required
    return node


def _value(kind: str, options: tuple[Option, ...]) -> Schema:
    """The schema of a value of argument-spec type ``kind`` (an option or an element)."""
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    if kind == "dict":
        return {"type": "object", **_object(options)}
    if kind in ("bytes", "bits"):  # "1K" as well as 1024
        return {"x-kubernetes-int-or-string": True}
    return {PRESERVE: True}  # raw, json, jsonarg: anything


def option_schema(option: Option) -> Schema:
    node: Schema = {}
    if option.description:
        node["description"] = option.description
    if option.type == "list":
        node["type"] = "array"
        items: Schema = (
            _value(option.elements, option.options) if option.elements else {PRESERVE: True}
        )
        if option.choices:
            items["enum"] = list(option.choices)
        node["items"] = items
    else:
        node.update(_value(option.type, option.options))
        if option.choices:
            node["enum"] = list(option.choices)
    if option.has_default and option.default is not None:
        node["default"] = _default(option.default, option)
    return node


def _default(value: Any, option: Option) -> Any:
    """A default as the CR writes it: dict keys of nested options renamed to fields."""
    if isinstance(value, dict) and option.options:
        fields = {o.name: o for o in option.options}
        return {
            (fields[k].field if k in fields else k): (_default(v, fields[k]) if k in fields else v)
            for k, v in value.items()
        }
    return value


def merge(generated: Schema, current: Mapping[str, Any] | None, *, soft: bool = False) -> Schema:
    """``generated`` with what only the file says kept from ``current`` (see the module).

    ``soft``: the file's descriptions win (the status schema, which the specs do not
    describe).
    """
    if not isinstance(current, Mapping):
        return generated
    merged = dict(generated)
    for key, value in current.items():
        if key == "properties" and "properties" in generated:
            merged[key] = _merge_properties(generated[key], value, soft=soft)
        elif key == "items" and isinstance(generated.get("items"), dict):
            merged[key] = merge(generated["items"], value, soft=soft)
        elif key == "required" and isinstance(value, list):
            fields = merged.get("properties") or {}
            extra = [f for f in value if f in fields and f not in merged.get("required", [])]
            if extra or merged.get("required"):
                merged["required"] = [*merged.get("required", []), *extra]
        elif key == "description" and soft:
            merged[key] = value
        elif key not in generated and key not in OWNED:
            merged[key] = copy.deepcopy(value)
    if merged.get(PRESERVE) and "properties" not in merged and NARROWING & merged.keys():
        del merged[PRESERVE]  # the file says what the open value holds
    if "x-kubernetes-int-or-string" in merged:
        merged.pop("type", None)
    return merged


def _merge_properties(generated: Mapping[str, Any], current: object, *, soft: bool) -> Schema:
    """Generated properties, each merged with the file's (the file's extra fields kept
    only in ``soft`` mode: the status fields an author describes)."""
    old = current if isinstance(current, Mapping) else {}
    merged = {name: merge(node, old.get(name), soft=soft) for name, node in generated.items()}
    if soft:
        for name, node in old.items():
            merged.setdefault(name, copy.deepcopy(node))
    return merged


def openapi(entry: EntryPoint, *, kind: str, current: Mapping[str, Any] | None) -> Schema:
    """The CRD version's ``openAPIV3Schema``: generated, then merged with ``current``."""
    fresh = document(entry, kind=kind)
    old = current if isinstance(current, Mapping) else {}
    found = old.get("properties")
    old_props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    merged = merge({k: v for k, v in fresh.items() if k != "properties"}, old)
    merged.pop("properties", None)
    props = fresh["properties"]
    merged["properties"] = {
        "apiVersion": merge(props["apiVersion"], old_props.get("apiVersion"), soft=True),
        "kind": merge(props["kind"], old_props.get("kind"), soft=True),
        "metadata": props["metadata"],
        "spec": merge(props["spec"], old_props.get("spec")),
        "status": merge(props["status"], old_props.get("status"), soft=True),
    }
    if entry.short_description == "" and "description" in old:
        merged["description"] = old["description"]
    return merged
