"""Asking the author, one rule at a time, whether a denied request may be granted.

Part of ``playbook-operator rbac --grant-denied``. A 403 in a run is the cluster's
answer to what the role (or a CR's data in it) asked for; turning it into a rule is a
decision the author makes, per rule, at a terminal: each question names the rule and
where it would be written, and only ``y``/``yes`` grants it. Without a terminal on
standard input there is no one to ask: the flag refuses (:class:`NoTerminalError`)
before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TextIO

from runner.base import errors
from runner.rbac import rules as rbac_rules

YES = frozenset({"y", "yes"})


class Terminal(Protocol):
    """Where answers are read: standard input, when it is a terminal."""

    def isatty(self) -> bool: ...

    def readline(self) -> str: ...


class NoTerminalError(errors.ConfigError):
    """``--grant-denied`` without a terminal to ask on."""

    def __init__(self) -> None:
        super().__init__(
            "--grant-denied asks before it grants each denied request, and standard "
            "input is not a terminal: run it interactively, or add the rules to the "
            "role file by hand"
        )


def require(terminal: Terminal) -> None:
    """Raise :class:`NoTerminalError` unless ``terminal`` is a terminal."""
    if not terminal.isatty():
        raise NoTerminalError


def ask(
    uses: Sequence[rbac_rules.Use],
    *,
    terminal: Terminal,
    out: TextIO,
    describe: Callable[[rbac_rules.Use], str],
) -> list[rbac_rules.Use]:
    """The ``uses`` the author answered yes for, one question each on ``out``; the end
    of input answers no to the rest."""
    require(terminal)
    granted: list[rbac_rules.Use] = []
    for use in uses:
        out.write(f"The API server denied {use.needs()}. Grant it, as {describe(use)}? [y/N] ")
        out.flush()
        answer = terminal.readline()
        if not answer:
            out.write("\n")
            break
        if answer.strip().lower() in YES:
            granted.append(use)
    return granted
