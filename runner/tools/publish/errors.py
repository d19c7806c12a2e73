"""Errors of the publishing commands (``generate crd``, ``generate csv``, ``scorecard``).

Outside the runtime flow (watch → queue → reconcile → ansible → status): they are raised
before a file is written, name the file and the field, and the command prints them and
exits 1. They join the runtime's hierarchy (:mod:`runner.base.errors`) under its base::

    PlaybookOperatorError
    └── PublishError             a manifest cannot be generated as asked
        ├── SpecError            a role's meta/argument_specs.yml says something
        │                        a CRD schema cannot (file and option named)
        └── ToolError            a pinned Go tool cannot be built or run
"""

from __future__ import annotations

from runner.base import errors


class PublishError(errors.PlaybookOperatorError):
    """A manifest cannot be generated; nothing was written."""


class SpecError(PublishError):
    """A role's argument specs cannot become a schema: ``path`` and ``option`` say where."""

    def __init__(self, *, path: str, option: str, problem: str) -> None:
        self.path = path
        self.option = option
        self.problem = problem
        where = f" option {option!r}" if option else ""
        super().__init__(f"{path}:{where}: {problem}")


class ToolError(PublishError):
    """A pinned Go tool (operator-sdk, opm, kustomize, scorecard-test) is unavailable."""
