"""Byte sizes written as Kubernetes quantities (``512Mi``, ``1Gi``, ``2G``, ``1048576``).

Flags that take a size (``--max-runner-artifacts-size``) read them as a pod spec's
``resources`` or an ``emptyDir``'s ``sizeLimit`` are written, so the same text serves both.
"""

from __future__ import annotations

import re

_SUFFIXES = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)")


def parse_bytes(text: str) -> int:
    """Bytes from a quantity; ValueError naming the accepted forms otherwise."""
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"not a size: {text!r} (bytes, or a number with k, M, G, T, Ki, Mi, Gi or Ti)"
        )
    number, suffix = match.groups()
    return int(float(number) * _SUFFIXES[suffix])
