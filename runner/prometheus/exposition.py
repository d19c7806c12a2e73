"""The Prometheus text format (0.0.4) written the way Go's client writes it.

ansible-operator's ``/metrics`` is written by Go's Prometheus client (through
controller-runtime), and dashboards, alerts and roles' queries were written against
that text. ``prometheus_client`` writes the same format with other habits, so this
module writes it itself from what :class:`~runner.prometheus.registry.Registry`
collects: numbers as Go formats them (``1`` not ``1.0``, ``1e+06``: bucket bounds
are label values, so ``le="1.0"`` would not match a query for ``le="1"``), labels
sorted with ``le``/``quantile`` last, no ``_created`` series, nothing for a family
without series, counters under the name they are sampled as, families by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal

from runner.prometheus import registry as registry_mod

__all__ = ["exposition", "go_float"]


def go_float(value: float) -> str:
    """A number as Go's client writes it (``strconv.FormatFloat(v, 'g', -1, 64)``):
    ``1`` not ``1.0``, ``1e+06`` not ``1000000.0``. Bucket bounds (``le``) are
    label values, so ``le="1.0"`` would not match a query for ``le="1"``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    point = len(text) + int(exponent)  # digits before the decimal point
    prefix = "-" if value < 0 else ""
    if not -4 <= point - 1 < 6:  # Go's %e range for the shortest representation
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{prefix}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def _escape(text: str, *, quote: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def _labels(labels: dict[str, str]) -> str:
    """Sorted by name, with ``le``/``quantile`` last and in Go's number format."""
    if not labels:
        return ""
    pairs = sorted((k, v) for k, v in labels.items() if k not in ("le", "quantile"))
    for bound in ("le", "quantile"):
        if bound in labels:
            pairs.append((bound, go_float(float(labels[bound]))))
    return "{" + ",".join(f'{k}="{_escape(v, quote=True)}"' for k, v in pairs) + "}"


def _families(
    registry: registry_mod.Collector,
) -> Iterable[tuple[str, str, registry_mod.Family]]:
    """(exposed name, type, family), dropping prometheus_client's ``_created`` series."""
    for family in registry.collect():
        samples = [s for s in family.samples if s.name != family.name + "_created"]
        if not samples:
            continue  # Go's client writes nothing for a vector without series
        family.samples = samples
        kind = family.type
        name = family.name
        if kind == "counter":
            name = samples[0].name  # ``x_total`` for built-in counters, as named for roles
        elif kind == "info":
            name, kind = name + "_info", "gauge"
        elif kind not in ("gauge", "histogram", "summary"):
            kind = "untyped"
        yield name, kind, family


def exposition(registry: registry_mod.Collector) -> bytes:
    """The Prometheus text format (0.0.4) as Go's client writes it, families by name:
    what ``registry`` (the runtime's :class:`~runner.prometheus.registry.Registry`, or any
    collector) collects now."""
    lines: list[str] = []
    for name, kind, family in sorted(_families(registry), key=lambda item: item[0]):
        lines.append(f"# HELP {name} {_escape(family.documentation, quote=False)}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(
            f"{s.name}{_labels(dict(s.labels))} {go_float(s.value)}" for s in family.samples
        )
    return ("\n".join(lines) + "\n").encode() if lines else b""
