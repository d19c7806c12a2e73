"""A role as watches.yaml names it, resolved on disk.

Part of the configuration (read once at start-up): :mod:`runner.config.lookup` finds a
watch's, finalizer's or webhook's role and returns it as a :class:`Role`; the watch
entries (:mod:`runner.config.entry`) and admission hooks (:mod:`runner.config.admission`)
hold it. Its own module so that those two need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Role:
    """A role as ansible-runner is given it: ``--role name`` with ``roles_path`` on the path."""

    name: str  # the directory's basename, or the FQCN of a collection role
    roles_path: Path | None  # None for a collection role: Ansible finds it by FQCN
    path: Path  # the role's directory, which exists
