"""operator-sdk's camelCase → snake_case conversion of custom resource spec keys.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status):
extra vars are built from the CR's spec, and operator-sdk's roles expect its
exact key names (``egressIPs`` → ``egress_ips``, ``ThisX`` → ``_this_x``).
The rules reproduce ``paramconv.ToSnake`` of operator-sdk's Ansible operator,
quirks included; only keys change, values are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# paramconv's `([a-zA-Z])(\d+)([a-zA-Z](\d+))` → `$1 $2 $3`: "a1b2" → "a 1 b2".
# Go's \d is ASCII-only, hence [0-9].
_NUMBER_SEQUENCE = re.compile(r"([a-zA-Z])([0-9]+)([a-zA-Z]([0-9]+))")

# Acronyms kept whole, with their plurals ("IPs"). paramconv iterates a Go map,
# so its order is random; results only differ for keys holding several of them.
_SPECIAL_WORDS = ("HTTP", "URL", "IP")
_SPECIAL_LOWER = frozenset(word.lower() for word in _SPECIAL_WORDS)
_DELIMITERS = frozenset(" _-")


def _is_upper(char: str) -> bool:
    return "A" <= char <= "Z"


def _is_lower(char: str) -> bool:
    return "a" <= char <= "z"


def _isolate_special_words(value: str) -> str:
    """Put ``_`` around the first occurrence of each acronym; ``IPs`` becomes ``IPS``."""
    for word in _SPECIAL_WORDS:
        idx = value.find(word)
        if idx < 0:
            continue
        end = idx + len(word)
        if end == len(value):
            value = value[:idx] + "_" + value[idx:]
        elif value[end] == "s":
            if end == len(value) - 1:
                value = value[:idx] + "_" + word + "S"
            elif idx == 0:
                value = word + "S_" + value[end + 1 :]
            else:
                value = value[:idx] + "_" + word + "S_" + value[end + 1 :]
        elif idx == 0:
            value = word + "_" + value[end:]
        else:
            value = value[:idx] + "_" + word + "_" + value[end:]
    return value


def to_snake(key: str) -> str:
    """One key in snake_case, as operator-sdk's ``paramconv.ToSnake`` writes it."""
    text = _NUMBER_SEQUENCE.sub(r"\1 \2 \3", key).strip(" ")
    if not text:
        return text  # paramconv panics on an empty key; keep it as it is
    prefix = "_" if _is_upper(text[0]) else ""
    if text.upper() != text:  # an all-caps key keeps its acronyms as plain letters
        text = _isolate_special_words(text)

    bits: list[str] = []
    word = ""
    position = -1  # paramconv's iReal: index within the current word
    for i, char in enumerate(text):
        position += 1
        following = text[i + 1] if i + 1 < len(text) else ""
        case_changes = (_is_upper(char) and _is_lower(following)) or (
            _is_lower(char) and _is_upper(following)
        )
        if position > 0 and word[-1] != "_" and case_changes:
            if _is_upper(char):  # "JSONData": "JSON" ends before "Da"
                bits.append(word.lower())
                word, position = char, 0
            elif _is_lower(char):  # "sizeK8s": "size" ends before "K"
                bits.append((word + char).lower())
                word, position = "", -1
        elif char in _DELIMITERS:
            bits.append(word.lower())
            word, position = "", -1
        else:
            word += char
    bits.append(word.lower())
    joined = "_".join(bits)
    return joined if bits[0] in _SPECIAL_LOWER else prefix + joined


def keys_to_snake(value: Any) -> Any:
    """``value`` with every mapping key snake_cased, through nested mappings and lists."""
    if isinstance(value, Mapping):
        return {to_snake(str(k)): keys_to_snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys_to_snake(item) for item in value]
    return value
