"""Go durations (``"30s"``, ``"1h2m"``, ``"500ms"``), as Go's ``time.ParseDuration`` reads them.

watches.yaml's ``reconcilePeriod`` and ``reconcileTimeout`` are written as Go durations
(operator-sdk decodes them with Go), so a file valid there loads the same here; the flags
of the same meaning accept them too. Callers use it as ``durations.parse``.
"""

from __future__ import annotations

import re

_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9}
_UNITS.update({"m": 60 * 10**9, "h": 3600 * 10**9})


def parse(text: str) -> float:
    """Seconds in a Go duration (``"300ms"``, ``"-1.5h"``, ``"2h45m"``), as time.ParseDuration."""
    body = text[1:] if text.startswith(("+", "-")) else text
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}: expected e.g. '30s', '1h2m' or '500ms'")
    nanoseconds, pos = 0, 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        assert match is not None  # every group may be empty, so it always matches
        whole, fraction, unit = match.groups()
        if not whole and not fraction:
            raise ValueError(f"invalid duration {text!r}: expected e.g. '30s', '1h2m' or '500ms'")
        if unit not in _UNITS:
            problem = f"unknown unit {unit!r}" if unit else "missing unit"
            raise ValueError(f"{problem} in duration {text!r}; units are ns, us, ms, s, m, h")
        scale = _UNITS[unit]
        nanoseconds += int(whole or 0) * scale
        if fraction:
            nanoseconds += int(fraction) * scale // 10 ** len(fraction)
        pos = match.end()
    if nanoseconds >= 2**63:
        raise ValueError(f"duration {text!r} is out of range")
    return (-nanoseconds if text.startswith("-") else nanoseconds) / 1e9
