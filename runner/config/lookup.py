"""Where a watch's role or playbook is found on disk, as operator-sdk and Ansible look.

An entry's ``role`` or ``playbook`` (and its finalizer's, and its webhooks') is resolved
once, at start-up, so a missing role fails the start and not the first reconcile. Relative
paths resolve against ``base_dir`` (the current directory by default), as operator-sdk
resolves them against its working directory (``/opt/ansible`` in its image); roles are
searched on ``roles_path`` and, by FQCN, in the collections on ``collections_path``, as
``ANSIBLE_ROLES_PATH`` and ``ANSIBLE_COLLECTIONS_PATH`` are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.config import fields, roles

#: Ansible's own default, used when no collections path is given.
DEFAULT_COLLECTIONS_PATH = ("~/.ansible/collections", "/usr/share/ansible/collections")


@dataclass(frozen=True)
class Search:
    """Where roles and playbooks are looked for."""

    base_dir: Path
    roles_path: tuple[Path, ...]
    collections_path: tuple[Path, ...]

    @classmethod
    def under(
        cls, base_dir: Path, *, roles_path: Sequence[str], collections_path: Sequence[str]
    ) -> Search:
        """The search from ``base_dir``; an empty ``collections_path`` means Ansible's default."""
        return cls(
            base_dir=base_dir,
            roles_path=_dirs(roles_path, base=base_dir),
            collections_path=_dirs(collections_path or DEFAULT_COLLECTIONS_PATH, base=base_dir),
        )


def target(
    raw: Mapping[str, Any], *, where: fields.Where, search: Search, prefix: str
) -> tuple[roles.Role | None, Path | None]:
    """The ``role`` or ``playbook`` of ``raw`` (at most one is set), found on disk."""
    role, playbook = (
        fields.get(raw, key, str, where=where, prefix=prefix) for key in ("role", "playbook")
    )
    for key, value in (("role", role), ("playbook", playbook)):
        if value == "":
            raise where.error(prefix + key, "must not be empty")
    if role is not None and playbook is not None:
        problem = "set together with 'role'; keep one (operator-sdk ignores the role)"
        raise where.error(prefix + "playbook", problem)
    if playbook is not None:
        path = search.base_dir / Path(playbook).expanduser()
        if not path.is_file():
            raise where.error(prefix + "playbook", f"playbook not found: expected a file at {path}")
        return None, path
    if role is not None:
        candidates = _role_candidates(role, search=search)
        for path, fqcn in candidates:
            if path.is_dir():
                if fqcn is not None:
                    return roles.Role(name=fqcn, roles_path=None, path=path), None
                return roles.Role(name=path.name, roles_path=path.parent, path=path), None
        looked = ", ".join(str(path) for path, _ in candidates)
        raise where.error(prefix + "role", f"role {role!r} not found; looked in: {looked}")
    return None, None


def _role_candidates(name: str, *, search: Search) -> list[tuple[Path, str | None]]:
    """Where operator-sdk looks for a role, in order, each with its FQCN if from a collection."""
    if Path(name).is_absolute():
        return [(Path(name), None)]
    candidates: list[tuple[Path, str | None]] = []
    parts = name.split(".")
    if len(parts) == 3 and all(parts):
        namespace, collection, role = parts
        for parent in search.collections_path:
            path = parent / "ansible_collections" / namespace / collection / "roles" / role
            candidates.append((path, name))
    for parent in search.roles_path:
        candidates += [(parent / name, None), (parent / "roles" / name, None)]
    # A plain relative path ("roles/memcached") is the last resort, as in operator-sdk.
    return [*candidates, (search.base_dir / "roles" / name, None), (search.base_dir / name, None)]


def _dirs(entries: Sequence[str], *, base: Path) -> tuple[Path, ...]:
    return tuple(base / Path(path).expanduser() for path in entries if path)
