"""Label selectors (``metav1.LabelSelector``): which primary objects a watch reconciles.

watches.yaml's ``selector`` is parsed here, at start-up, with the API server's
validation rules, so a bad selector fails before anything is watched rather
than at the first list. Later stages either send :meth:`LabelSelector.to_query`
with list/watch requests or filter events with :meth:`LabelSelector.matches`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"(?:(?P<prefix>{_PREFIX})/)?(?P<name>{_NAME})")
_VALUE = re.compile(rf"({_NAME})?")


class Operator(enum.Enum):
    """``matchExpressions[].operator``, spelt as in the YAML."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class SelectorError(ValueError):
    """An invalid selector. ``field`` is relative to the selector: ``""`` or ``.matchLabels.app``.

    Internal: :mod:`runner.config.watches` turns it into a
    :class:`~runner.base.errors.WatchesError`.
    """

    def __init__(self, *, field: str, problem: str) -> None:
        super().__init__(f"selector{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` item."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator is Operator.IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator is Operator.NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        return (self.key in labels) == (self.operator is Operator.EXISTS)

    def to_query(self) -> str:
        values = ",".join(sorted(set(self.values)))
        return {
            Operator.IN: f"{self.key} in ({values})",
            Operator.NOT_IN: f"{self.key} notin ({values})",
            Operator.EXISTS: self.key,
            Operator.DOES_NOT_EXIST: f"!{self.key}",
        }[self.operator]


@dataclass(frozen=True)
class LabelSelector:
    """``matchLabels`` and ``matchExpressions``, all of which must hold; empty matches all."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(
            key in labels and labels[key] == value for key, value in self.match_labels
        ) and all(requirement.matches(labels) for requirement in self.match_expressions)

    def to_query(self) -> str:
        """The ``labelSelector`` query parameter, sorted by key as Kubernetes prints selectors."""
        parts = [(key, f"{key}={value}") for key, value in self.match_labels]
        parts += [
            (requirement.key, requirement.to_query()) for requirement in self.match_expressions
        ]
        return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))

    @classmethod
    def parse(cls, raw: object) -> LabelSelector:
        """Read a selector as decoded from YAML; None is the empty selector."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise SelectorError(field="", problem=f"expected a mapping, saw {_describe(raw)}")
        for key in raw:
            if key not in ("matchLabels", "matchExpressions"):
                problem = "unknown key; expected 'matchLabels' or 'matchExpressions'"
                raise SelectorError(field=f".{key}", problem=problem)
        labels = raw.get("matchLabels") or {}
        if not isinstance(labels, dict):
            problem = f"expected a mapping, saw {_describe(labels)}"
            raise SelectorError(field=".matchLabels", problem=problem)
        expressions = raw.get("matchExpressions") or []
        if not isinstance(expressions, list):
            problem = f"expected a list, saw {_describe(expressions)}"
            raise SelectorError(field=".matchExpressions", problem=problem)
        return cls(
            match_labels=tuple(
                (_key(key, field=f".matchLabels.{key}"), _value(value, field=f".matchLabels.{key}"))
                for key, value in labels.items()
            ),
            match_expressions=tuple(
                _requirement(item, field=f".matchExpressions[{i}]")
                for i, item in enumerate(expressions)
            ),
        )


def _requirement(raw: object, *, field: str) -> Requirement:
    if not isinstance(raw, dict):
        problem = f"expected a mapping of key, operator, values; saw {_describe(raw)}"
        raise SelectorError(field=field, problem=problem)
    for name in raw:
        if name not in ("key", "operator", "values"):
            problem = "unknown key; expected 'key', 'operator' or 'values'"
            raise SelectorError(field=f"{field}.{name}", problem=problem)
    key = _key(raw.get("key"), field=f"{field}.key")
    spelt = raw.get("operator")
    names = ", ".join(operator.value for operator in Operator)
    try:
        operator = Operator(spelt)
    except ValueError:
        problem = f"expected one of {names}, saw {_describe(spelt)}"
        raise SelectorError(field=f"{field}.operator", problem=problem) from None
    values = raw.get("values") or []
    if not isinstance(values, list):
        problem = f"expected a list, saw {_describe(values)}"
        raise SelectorError(field=f"{field}.values", problem=problem)
    wants_values = operator in (Operator.IN, Operator.NOT_IN)
    if wants_values != bool(values):
        problem = f"must be {'non-empty' if wants_values else 'empty'} for {operator.value}"
        raise SelectorError(field=f"{field}.values", problem=problem)
    checked = (_value(value, field=f"{field}.values[{i}]") for i, value in enumerate(values))
    return Requirement(key=key, operator=operator, values=tuple(checked))


def _key(key: object, *, field: str) -> str:
    if key is None:
        raise SelectorError(field=field, problem="required")
    match = _KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None or len(match["name"]) > 63 or len(match["prefix"] or "") > 253:
        problem = (
            f"invalid label key {key!r}: expected [prefix/]name, the name up to 63 "
            "alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
        )
        raise SelectorError(field=field, problem=problem)
    return match.string


def _value(value: object, *, field: str) -> str:
    if not isinstance(value, str):
        problem = f"expected a string, saw {_describe(value)} (quote it in YAML)"
        raise SelectorError(field=field, problem=problem)
    if len(value) > 63 or not _VALUE.fullmatch(value):
        problem = (
            f"invalid label value {value!r}: expected up to 63 alphanumerics, "
            "'-', '_' or '.', starting and ending alphanumeric"
        )
        raise SelectorError(field=field, problem=problem)
    return value


def _describe(value: object) -> str:
    return "null" if value is None else f"{type(value).__name__} {value!r}"
