"""The host's sysctls a real node changes: recorded before it starts, put back by ``down``.

devcluster itself writes no sysctl, but the real node's components do, machine-wide
(:data:`CHANGED_BY_NODE`): the bridge CNI plugin turns IPv4 forwarding on (``isGateway``),
and the kubelet sets its "kernel tunables" (memory overcommit, panic on oops, reboot 10 s
after a panic, the root user's key quotas) unless they already have its values. Those
it is told to leave alone (kube-proxy's conntrack sysctls, ``route_localnet``) are left
alone by :mod:`devcluster.nodeconfig`; the per-interface ones go with the bridge and the
pods' links.

:func:`devcluster.node.start` calls :func:`record` before any of the node's processes
starts, :func:`devcluster.node.stop` calls :func:`restore`. A sysctl is recorded the first
time only: a node started again after a crash (its sysctls still changed) adds nothing,
so what ``down`` puts back is what the host had before devcluster's first node. The
record is machine-wide like the sysctls (one real node per machine), in /run beside the
node's claim: a reboot empties both, and resets the sysctls too.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Where the kernel shows them; a sysctl's name here is its path below (``net/ipv4/ip_forward``).
PROC_SYS = Path("/proc/sys")
#: name → its value before the real node, for every sysctl not yet put back.
RECORD = Path("/run/devcluster/sysctls.json")

#: The host-wide sysctls the real node's components write → who writes them, and why.
CHANGED_BY_NODE = {
    "net/ipv4/ip_forward": "the bridge CNI plugin (isGateway: the pods' gateway forwards)",
    "vm/overcommit_memory": "kubelet (kernel tunables: 1)",
    "vm/panic_on_oom": "kubelet (kernel tunables: 0)",
    "kernel/panic": "kubelet (kernel tunables: reboot 10 s after a panic)",
    "kernel/panic_on_oops": "kubelet (kernel tunables: 1)",
    "kernel/keys/root_maxkeys": "kubelet (kernel tunables: 1000000)",
    "kernel/keys/root_maxbytes": "kubelet (kernel tunables: 25000000)",
}


@dataclass(frozen=True)
class Restored:
    """One recorded sysctl that :func:`restore` found changed."""

    name: str
    #: what the host had before the node, written back
    value: str
    #: what the node left
    found: str
    #: why it could not be written back (it stays recorded for the next ``down``), or ""
    error: str = ""


def _read(root: Path, name: str) -> str | None:
    try:
        return (root / name).read_text().strip()
    except OSError:
        return None


def _same(a: str, b: str) -> bool:
    # Multi-value sysctls read back tab-separated whatever separated them when written.
    return a.split() == b.split()


def _load(file: Path) -> dict[str, str]:
    try:
        raw = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def _save(file: Path, values: dict[str, str]) -> None:
    if not values:
        file.unlink(missing_ok=True)
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    partial = file.with_name(f".{file.name}.{os.getpid()}")
    partial.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
    partial.replace(file)  # whole or not at all: a crash here must not lose a value


def record(
    *,
    names: Iterable[str] = tuple(CHANGED_BY_NODE),
    root: Path = PROC_SYS,
    file: Path = RECORD,
) -> dict[str, str]:
    """Record the current value of every sysctl in ``names`` not recorded yet; return the
    whole record. A sysctl this kernel lacks is skipped."""
    values = _load(file)
    for name in names:
        current = _read(root, name)
        if name not in values and current is not None:
            values[name] = current
    _save(file, values)
    return values


def restore(*, root: Path = PROC_SYS, file: Path = RECORD) -> list[Restored]:
    """Write back every recorded sysctl that changed, then forget the record.

    Returns what was changed; one that cannot be written back is returned with its
    error and stays recorded, so a later ``down`` tries again.
    """
    values = _load(file)
    kept: dict[str, str] = {}
    changed = []
    for name, value in sorted(values.items()):
        found = _read(root, name)
        if found is None or _same(found, value):
            continue
        error = ""
        try:
            (root / name).write_text(f"{value}\n")
        except OSError as exc:
            error = str(exc)
            kept[name] = value
        changed.append(Restored(name=name, value=value, found=found, error=error))
    with contextlib.suppress(OSError):
        _save(file, kept)
    return changed
