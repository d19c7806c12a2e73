"""watches.yaml's ``validation:`` and ``mutation:`` keys: a kind's admission webhooks.

Read with the rest of watches.yaml at start-up (:mod:`runner.config.watches` calls
:func:`parse` for each entry); :mod:`runner.webhook` serves what this returns. Each
key is a mapping::

    validation:
      role: memcached_validate       # or playbook: (exactly one), found as the entry's own
      vars: {…}                      # added to the run's extra vars
      operations: [CREATE, UPDATE]   # CREATE, UPDATE, DELETE; the default is CREATE and UPDATE
      timeoutSeconds: 10             # 1..30 (the API server's own bounds), the default 10
      failurePolicy: Fail            # Fail or Ignore, the default Fail

Mistakes raise :class:`~runner.base.errors.WatchesError` through the ``error``
callback, naming the file, the entry and the field (``validation.timeoutSeconds``).
Role and playbook lookup is the entry's own (``resolve``), so a webhook role is found
where its reconcile role would be.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runner.base import errors
from runner.config import roles
from runner.kube import types as kube

KEYS = ("validation", "mutation")
_FIELDS = ("role", "playbook", "vars", "operations", "timeoutSeconds", "failurePolicy")
OPERATIONS = ("CREATE", "UPDATE", "DELETE")
DEFAULT_OPERATIONS = ("CREATE", "UPDATE")
DEFAULT_TIMEOUT = 10
#: The API server accepts 1..30 seconds for a webhook's timeoutSeconds.
MIN_TIMEOUT, MAX_TIMEOUT = 1, 30


class Kind(enum.Enum):
    """Which webhook: the path prefix kubebuilder gives it is the value."""

    VALIDATION = "validate"
    MUTATION = "mutate"


class FailurePolicy(enum.Enum):
    FAIL = "Fail"
    IGNORE = "Ignore"


#: Reports a mistake: (field, problem) → the error to raise.
ErrorFor = Callable[[str | None, str], errors.WatchesError]
#: Finds the role or playbook of a mapping, as the entry's own are found: (raw, prefix).
Resolve = Callable[[Mapping[str, Any], str], tuple[roles.Role | None, Path | None]]


@dataclass(frozen=True)
class Hook:
    """One admission webhook of a kind: what runs, for which operations, within what time."""

    kind: Kind
    gvk: kube.GVK
    role: roles.Role | None  # exactly one of role and playbook is set
    playbook: Path | None
    vars: Mapping[str, Any] = field(hash=False)
    operations: frozenset[str] = frozenset(DEFAULT_OPERATIONS)
    timeout_seconds: int = DEFAULT_TIMEOUT
    failure_policy: FailurePolicy = FailurePolicy.FAIL

    @property
    def path(self) -> str:
        """kubebuilder's path: ``/validate-cache-example-com-v1alpha1-memcached``."""
        return path_for(self.kind, self.gvk)


def path_for(kind: Kind, gvk: kube.GVK) -> str:
    group = gvk.group.replace(".", "-")
    parts = [kind.value, *([group] if group else []), gvk.version, gvk.kind.lower()]
    return "/" + "-".join(parts)


def parse(
    raw: Mapping[str, Any],
    key: str,
    *,
    gvk: kube.GVK,
    error: ErrorFor,
    resolve: Resolve,
) -> Hook | None:
    """The webhook ``raw[key]`` describes (``key`` is ``validation`` or ``mutation``)."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise error(key, f"expected a mapping with a 'role' or 'playbook', saw {_kind(value)}")
    prefix = key + "."
    for name in value:
        if name not in _FIELDS:
            raise error(prefix + str(name), f"unknown key; expected one of {', '.join(_FIELDS)}")
    role, playbook = resolve(value, prefix)
    if role is None and playbook is None:
        raise error(key, "one of 'role' or 'playbook' is required")
    variables = value.get("vars")
    if variables is None:
        variables = {}
    if not isinstance(variables, dict) or not all(isinstance(k, str) for k in variables):
        raise error(prefix + "vars", f"expected a mapping with string keys, saw {_kind(variables)}")
    return Hook(
        kind=Kind.VALIDATION if key == "validation" else Kind.MUTATION,
        gvk=gvk,
        role=role,
        playbook=playbook,
        vars=MappingProxyType(variables),
        operations=_operations(value.get("operations"), error=error, where=prefix + "operations"),
        timeout_seconds=_timeout(value.get("timeoutSeconds"), error=error, where=prefix),
        failure_policy=_policy(value.get("failurePolicy"), error=error, where=prefix),
    )


def _operations(value: object, *, error: ErrorFor, where: str) -> frozenset[str]:
    if value is None:
        return frozenset(DEFAULT_OPERATIONS)
    if not isinstance(value, list) or not value:
        raise error(where, f"expected a non-empty list of {', '.join(OPERATIONS)}")
    for i, item in enumerate(value):
        if item not in OPERATIONS:
            raise error(f"{where}[{i}]", f"expected one of {', '.join(OPERATIONS)}, saw {item!r}")
    return frozenset(value)


def _timeout(value: object, *, error: ErrorFor, where: str) -> int:
    if value is None:
        return DEFAULT_TIMEOUT
    if type(value) is not int or not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        problem = f"expected an integer from {MIN_TIMEOUT} to {MAX_TIMEOUT}, saw {value!r}"
        raise error(where + "timeoutSeconds", problem)
    return value


def _policy(value: object, *, error: ErrorFor, where: str) -> FailurePolicy:
    if value is None:
        return FailurePolicy.FAIL
    try:
        return FailurePolicy(value)
    except ValueError:
        raise error(where + "failurePolicy", f"expected Fail or Ignore, saw {value!r}") from None


def _kind(value: object) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"
