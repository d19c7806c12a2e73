"""How the benchmarks write their figures: medians and spreads, ratios, Markdown tables,
and the raw figures as JSON (``--json FILE``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float], unit: str = "s") -> str:
    """``median (min-max)``, e.g. ``1.42 s (1.37-1.51)``."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f} {unit}"
    return f"{median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


def ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator or math.isnan(denominator):
        return "-"
    return f"{numerator / denominator:.2f}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def dump(path: Path | None, figures: dict[str, Any]) -> None:
    """Write the raw figures as JSON when ``path`` is given."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
