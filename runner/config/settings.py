"""The one settings object, built once at start-up from flags, environment, ``--config``
and watches.yaml (:mod:`runner.config.builder`).

:class:`Settings` holds what the whole process shares (watches, namespaces, the
kubeconfig, the shutdown grace) and one section per stage (:mod:`runner.config.sections`,
where the defaults live, following operator-sdk's ``ansible-operator run``). The object
is passed explicitly to whoever needs it, each stage taking only its section; there are
no module-level globals. watches.yaml is parsed by :mod:`runner.config.watches` and kept
on the settings so every stage sees the same, validated configuration. The annotations a
CR may carry are in :mod:`runner.config.cr_annotations`; the runner directory's claim in
:mod:`runner.config.rundir`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.config import entry, sections
from runner.kube.types import GVK

#: Environment variable that turns warm execution off (``false``) unless the flag is given.
WARM_ENV = "PLAYBOOK_OPERATOR_WARM"


@dataclass(frozen=True)
class Settings:
    """What the whole process shares, and one section per stage that reads the rest."""

    watches_file: Path
    watches: tuple[entry.Watch, ...] = ()
    kubeconfig: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    graceful_shutdown_timeout: float = 30.0
    dev: bool = False  # run --dev: runs read a snapshot; edits reconcile again (tools.devloop)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    ansible: sections.AnsibleSettings = field(default_factory=sections.AnsibleSettings)
    reconcile: sections.ReconcileSettings = field(default_factory=sections.ReconcileSettings)
    election: sections.ElectionSettings = field(default_factory=sections.ElectionSettings)
    serving: sections.ServingSettings = field(default_factory=sections.ServingSettings)
    webhooks: sections.WebhookSettings = field(default_factory=sections.WebhookSettings)
    logging: sections.LogSettings = field(default_factory=sections.LogSettings)


def default_workers(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """``--max-concurrent-reconciles``' default: the container's CPU quota rounded up
    (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``), at
    least 1; without a quota, the CPUs this process may run on (Go's runtime.NumCPU,
    operator-sdk's default). A 500m pod on a 64-core node gets 1 worker, not 64."""
    quota = _cpu_quota(cgroup)
    if quota is not None:
        return max(1, -(-quota[0] // quota[1]))  # ceiling division
    return len(os.sched_getaffinity(0)) or 1


def _cpu_quota(cgroup: Path) -> tuple[int, int] | None:
    """(quota, period) in microseconds, or None when unlimited or unreadable."""
    candidates = [(cgroup / "cpu.max", None)] + [
        (cgroup / d / "cpu.cfs_quota_us", cgroup / d / "cpu.cfs_period_us")
        for d in ("cpu", "cpu,cpuacct")
    ]
    for first, second in candidates:
        try:
            words = first.read_text().split()
            if second is not None:
                words += second.read_text().split()
            quota, period = int(words[0]), int(words[1])
        except (OSError, ValueError, IndexError):
            continue  # absent, or "max": no quota in this file
        return (quota, period) if quota > 0 and period > 0 else None
    return None


def env_suffix(gvk: GVK) -> str:
    """``<KIND>_<GROUP>`` upper-cased with ``.`` and ``-`` as ``_``, operator-sdk's convention."""
    return f"{gvk.kind}_{gvk.group}".upper().replace(".", "_").replace("-", "_")


def parse_namespaces(value: str) -> tuple[str, ...]:
    """WATCH_NAMESPACE: empty means all namespaces; a comma list means several."""
    return tuple(sorted({part.strip() for part in value.split(",") if part.strip()}))


def parse_bool(value: str) -> bool | None:
    """Go's ``strconv.ParseBool`` (how ansible-operator reads ``ANSIBLE_DEBUG_LOGS``);
    None when ``value`` is none of its spellings."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None
