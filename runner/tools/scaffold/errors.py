"""Errors of the authoring commands (``init``, ``create api``).

They sit outside the runtime flow (watch → queue → reconcile → ansible → status): they
are raised before anything is written, and the command prints them and exits 1. They
join the runtime's hierarchy (:mod:`runner.base.errors`) under its base::

    PlaybookOperatorError
    └── ScaffoldError            a project or API cannot be written as asked
        ├── InvalidNameError     a domain, project name, group, version or kind
        │                        breaks Kubernetes' naming rules
        └── ConflictError        the project or API is there already, or in the way
"""

from __future__ import annotations

from runner.base import errors


class ScaffoldError(errors.PlaybookOperatorError):
    """A project or an API cannot be scaffolded; nothing was written."""


class InvalidNameError(ScaffoldError):
    """A name breaks Kubernetes' rules; ``field`` is the flag it came from."""

    def __init__(self, *, field: str, value: str, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{field} {value!r}: {problem}")


class ConflictError(ScaffoldError):
    """What was asked for exists already (``unchanged``: exactly as asked) or clashes."""

    def __init__(self, message: str, *, unchanged: bool = False) -> None:
        self.unchanged = unchanged
        super().__init__(message)
