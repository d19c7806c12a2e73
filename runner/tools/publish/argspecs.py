"""A role's ``meta/argument_specs.yml``: the inputs of the role, as the CRD's spec fields.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``generate crd``
and ``generate csv`` read the entry point ``main`` of the role a watch names into
:class:`Option` trees. ansible-core reads the same file at run time and validates the
role's variables against it before the first task.

Each option is a role variable, so its name is snake_case; with ``snakeCaseParameters``
on (the default) the CR field is the camelCase name the runner turns back into it. That
reverse step is ambiguous for acronyms (``memory_limit_mb`` comes from ``memoryLimitMB``
as well as ``memoryLimitMb``), so an option keeps a field name that snake-cases to its
own name when one is known: one of its ``aliases``, or the name the CRD already gives
it. Otherwise the field is the plain lowerCamelCase form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.ansible import snake
from runner.tools.publish.errors import SpecError

ENTRY_POINT = "main"
SPEC_FILES = ("meta/argument_specs.yml", "meta/argument_specs.yaml")
TYPES = frozenset(
    {
        "str",
        "list",
        "dict",
        "bool",
        "int",
        "float",
        "path",
        "raw",
        "jsonarg",
        "json",
        "bytes",
        "bits",
    }
)
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Option:
    """One option of an entry point: a role variable, and the CR field it comes from."""

    name: str
    field: str
    type: str
    description: str
    required: bool
    default: Any  # _NO_DEFAULT when the spec gives none (None is a default of its own)
    choices: tuple[Any, ...]
    elements: str | None
    options: tuple[Option, ...]

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True)
class EntryPoint:
    """An entry point: its descriptions and its options, read from ``path``."""

    path: Path
    short_description: str
    description: str
    options: tuple[Option, ...]


def spec_file(role_dir: Path) -> Path | None:
    """The role's argument specs file, if it has one."""
    for name in SPEC_FILES:
        if (role_dir / name).is_file():
            return role_dir / name
    return None


def text(value: object) -> str:
    """A description as one paragraph (argument specs allow a string or a list of lines)."""
    if isinstance(value, list):
        return " ".join(str(line).strip() for line in value if str(line).strip())
    return " ".join(str(value).split()) if value is not None else ""


def camel(name: str) -> str:
    """``max_connections`` → ``maxConnections``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


FieldNames = Mapping[str, Any]  # the CRD's current schema at the same level (for names)


def field_name(*, name: str, aliases: Iterable[str], known: Iterable[str], snake_case: bool) -> str:
    """The CR field of option ``name``: an alias or a known field that snake-cases to
    it, else its camelCase form; ``name`` itself when snake_case is off."""
    if not snake_case:
        return name
    for candidate in (*aliases, *known):
        if candidate != name and snake.to_snake(candidate) == name:
            return candidate
    return camel(name)


def read(path: Path, *, snake_case: bool, known: FieldNames | None = None) -> EntryPoint:
    """Entry point ``main`` of the argument specs in ``path``; ``known`` is the CRD's
    current ``spec`` schema, whose field names are kept where they fit."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(path=str(path), option="", problem=f"cannot be read: {exc}") from exc
    specs = raw.get("argument_specs") if isinstance(raw, dict) else None
    main = specs.get(ENTRY_POINT) if isinstance(specs, dict) else None
    if not isinstance(main, dict):
        raise SpecError(
            path=str(path), option="", problem="no argument_specs.main entry point (a mapping)"
        )
    return EntryPoint(
        path=path,
        short_description=text(main.get("short_description")),
        description=text(main.get("description")),
        options=_options(
            main.get("options"), path=path, prefix="", snake_case=snake_case, known=known
        ),
    )


def _options(
    raw: object, *, path: Path, prefix: str, snake_case: bool, known: FieldNames | None
) -> tuple[Option, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecError(path=str(path), option=prefix, problem="options must be a mapping")
    properties = (known or {}).get("properties") or {}
    result: list[Option] = []
    fields: dict[str, str] = {}
    for name, spec in raw.items():
        option = _option(
            str(name), spec, path=path, prefix=prefix, snake_case=snake_case, known=properties
        )
        if option.field in fields:
            raise SpecError(
                path=str(path),
                option=f"{prefix}{name}",
                problem=f"same CR field {option.field!r} as option {fields[option.field]!r}",
            )
        fields[option.field] = option.name
        result.append(option)
    return tuple(result)


def _option(
    name: str, spec: object, *, path: Path, prefix: str, snake_case: bool, known: Mapping[str, Any]
) -> Option:
    where = f"{prefix}{name}"
    if not isinstance(spec, dict):
        raise SpecError(path=str(path), option=where, problem="must be a mapping")
    kind = str(spec.get("type", "str"))
    if kind not in TYPES:
        raise SpecError(path=str(path), option=where, problem=f"unknown type {kind!r}")
    aliases = [str(a) for a in spec.get("aliases") or ()]
    field = field_name(name=name, aliases=aliases, known=known, snake_case=snake_case)
    if snake_case and snake.to_snake(field) != name:
        raise SpecError(
            path=str(path),
            option=where,
            problem=f"the CR field {field!r} reaches the role as {snake.to_snake(field)!r}, "
            "not as this name: give the field's name as an alias",
        )
    elements = spec.get("elements")
    nested = spec.get("options")
    if nested is not None and not (kind == "dict" or (kind == "list" and elements == "dict")):
        raise SpecError(
            path=str(path),
            option=where,
            problem="options are for type dict, or type list with elements dict",
        )
    choices = spec.get("choices") or ()
    return Option(
        name=name,
        field=field,
        type=kind,
        description=text(spec.get("description")),
        required=bool(spec.get("required", False)),
        default=spec.get("default", _NO_DEFAULT),
        choices=tuple(choices) if isinstance(choices, list | tuple) else (),
        elements=str(elements) if elements is not None else None,
        options=_options(
            nested,
            path=path,
            prefix=f"{where}.",
            snake_case=snake_case,
            known=_nested_known(known.get(field), kind=kind),
        ),
    )


def _nested_known(schema: object, *, kind: str) -> FieldNames | None:
    """The CRD schema under a dict option (its properties), or a list's items."""
    if not isinstance(schema, dict):
        return None
    if kind == "list":
        items = schema.get("items")
        return items if isinstance(items, dict) else None
    return schema
