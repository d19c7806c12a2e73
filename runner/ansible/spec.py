"""What one run is asked to do: the :class:`RunSpec` the reconcile hands the Ansible stage.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status). A
plain value, checked when it is made; :mod:`runner.ansible.inputs` turns it into
the private data dir, :mod:`runner.ansible.launch` runs it. It lives apart from
both so that neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.config.sections import LogEvents


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One run of a role or playbook for one custom resource.

    ``private_data_dir`` is per CR and reused across runs; ``ident`` names this
    run's ``artifacts/<ident>``. ``cmdline`` is operator-sdk's ``--ansible-args``
    (outer single quotes are stripped). ``gathering_explicit``: default
    ``ANSIBLE_GATHERING=explicit`` unless the environment sets it.
    ``rotate_artifacts`` keeps that many artifact dirs (0 keeps all).
    ``on_event`` sees every job event too, in order (``playbook-operator preview``
    reads the tasks' results from them).
    """

    ident: str
    private_data_dir: Path
    extravars: Mapping[str, Any]
    playbook: Path | None = None
    role: str | None = None
    roles_path: Sequence[Path] = ()
    envvars: Mapping[str, str] = field(default_factory=dict)
    verbosity: int = 0
    cmdline: str = ""
    rotate_artifacts: int = 20
    log_events: LogEvents = LogEvents.TASKS
    gathering_explicit: bool = True
    collections_path: Sequence[Path] = ()
    inventory: Path | None = None  # default: localhost, local connection, this Python
    timeout: float | None = None  # seconds; the run is killed after it
    on_event: Callable[[Mapping[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        if (self.playbook is None) == (self.role is None):
            raise ValueError("RunSpec needs exactly one of playbook and role")
        if not self.ident or "/" in self.ident or self.ident in (".", "..", "latest"):
            raise ValueError(f"RunSpec ident {self.ident!r} cannot name an artifact dir")
