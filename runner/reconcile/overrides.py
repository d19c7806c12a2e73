"""CR-author overrides: the annotations that steer a CR's own runs, each held to a range.

Part of one reconcile (watch → queue → **reconcile** → ansible → status): the
reconciler reads operator-sdk's three annotations through here before it marks
the CR Running, so a bad value can never fail a run half-way. Whoever may edit
the CR writes them, so none may cost the operator more than its author allows:

===========================  ===============================================
annotation                   accepted
===========================  ===============================================
``verbosity``                ASCII digits, 0 to :data:`MAX_VERBOSITY` (or the
                             operator's own verbosity, if higher)
``reconcile-period``         a Go duration; ``0`` (no resync) or at least
                             :data:`MIN_RECONCILE_PERIOD` (or the watch's own
                             period, if shorter); unparsable is a Failure, as
                             in operator-sdk
``max-runner-artifacts``     ASCII digits, 1 to the watch's count; ``0`` means
                             the watch's count, as ``maxRunnerArtifacts: 0``
                             means the default (operator-sdk: keep all)
===========================  ===============================================

A value outside its range is clamped, one that is not a number is refused (the
default applies); either way a :class:`Bounded` carries the reason, which the
reconciler reports once per value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from runner.config import cr_annotations, durations

T = TypeVar("T", int, float)

#: -vvvv: connection and module-invocation detail; above it Ansible's debug output
#: floods the runner's log (and its disk, through artifacts).
MAX_VERBOSITY = 4
#: At most one run per second per CR: "1ns" would otherwise loop hot.
MIN_RECONCILE_PERIOD = 1.0


@dataclass(frozen=True)
class Bounded(Generic[T]):
    """The value to use; ``problem`` says why it is not the annotation's (None: it is)."""

    value: T
    problem: str | None = None


def verbosity(text: str | None, *, default: int) -> Bounded[int]:
    """``default`` is the operator's verbosity for the kind; it also raises the ceiling."""
    name = cr_annotations.VERBOSITY_ANNOTATION
    if not text:
        return Bounded(default)
    ceiling = max(MAX_VERBOSITY, default)
    if not _digits(text):
        return Bounded(
            default, f"{_shown(name, text)} is not a number 0-{ceiling}; using {default}"
        )
    if _number(text) > ceiling:
        return Bounded(ceiling, f"{_shown(name, text)} is above {ceiling}; using {ceiling}")
    return Bounded(_number(text))


def max_artifacts(text: str | None, *, default: int) -> Bounded[int]:
    """``default`` is the watch's ``maxRunnerArtifacts``, also the most a CR may keep."""
    name = cr_annotations.MAX_ARTIFACTS_ANNOTATION
    if not text:
        return Bounded(default)
    if not _digits(text):
        return Bounded(default, f"{_shown(name, text)} is not a number; using {default}")
    if _number(text) == 0:
        return Bounded(default, f"{_shown(name, text)} means the watch's count; using {default}")
    if _number(text) > default:
        return Bounded(default, f"{_shown(name, text)} is above the watch's {default}; using it")
    return Bounded(_number(text))


def reconcile_period(text: str | None, *, default: float) -> Bounded[float]:
    """``default`` is the watch's period, else the flag's. Raises ValueError when ``text``
    is not a duration (the reconciler reports a Failure, as operator-sdk does)."""
    if not text:
        return Bounded(default)
    seconds = durations.parse(text)
    floor = min(MIN_RECONCILE_PERIOD, default) if default > 0 else MIN_RECONCILE_PERIOD
    if 0 < seconds < floor:
        name = cr_annotations.RECONCILE_PERIOD_ANNOTATION
        return Bounded(floor, f"{_shown(name, text)} is below {floor:g}s; using {floor:g}s")
    return Bounded(seconds)


def _digits(text: str) -> bool:
    """ASCII digits only: str.isdigit() also admits "²" and "٣", which int() refuses or reads."""
    return text.isascii() and text.isdigit()


def _number(text: str) -> int:
    """ASCII digits as an int; past 9 digits simply "too many" (int() refuses past 4300)."""
    return int(text) if len(text) <= 9 else 10**9


def _shown(name: str, text: str) -> str:
    value = text if len(text) <= 40 else text[:37] + "..."
    return f"annotation {name}={value!r}"
