"""The kinds a role manages: what a CSV's owned CRD lists as its ``resources``.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``generate csv``
reads the role's templates and task files for Kubernetes objects, the way a reader does:
a ``kind:`` with an ``apiVersion:`` at the top of a template, or in a task's
``definition`` or module arguments (``kind`` with ``api_version``), but not in reads
(``k8s_info``). Templated values (``{{ }}``) are skipped: they are not known before a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_TOP_KIND = re.compile(r"^kind:\s*([A-Za-z][A-Za-z0-9]*)\s*$", re.MULTILINE)
_READS = ("k8s_info", "k8s_log", "k8s_cluster_info")
_TOP_API = re.compile(r"^apiVersion:\s*([A-Za-z0-9./-]+)\s*$", re.MULTILINE)


@dataclass(frozen=True, order=True)
class Managed:
    """One kind of object the role creates (``version`` without the group)."""

    kind: str
    version: str

    def reference(self) -> dict[str, str]:
        return {"kind": self.kind, "name": "", "version": self.version}


def _version(api_version: str) -> str:
    return api_version.rsplit("/", 1)[-1]


def _from_template(text: str) -> Iterator[Managed]:
    for chunk in re.split(r"^---\s*$", text, flags=re.MULTILINE):
        kinds, apis = _TOP_KIND.findall(chunk), _TOP_API.findall(chunk)
        if kinds and apis:
            yield Managed(kind=kinds[0], version=_version(apis[0]))


def _walk(node: Any) -> Iterator[Managed]:
    if isinstance(node, dict):
        kind = node.get("kind")
        api = node.get("api_version", node.get("apiVersion"))
        if isinstance(kind, str) and isinstance(api, str) and "{{" not in kind + api:
            yield Managed(kind=kind, version=_version(api))
        for key, value in node.items():
            if not str(key).endswith(_READS):  # k8s_info reads objects, it manages none
                yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def kinds(role_dir: Path, *, own_kind: str) -> list[Managed]:
    """The kinds ``role_dir``'s templates and tasks create, sorted, ``own_kind`` left out."""
    found: set[Managed] = set()
    for path in (
        sorted((role_dir / "templates").rglob("*")) if (role_dir / "templates").is_dir() else []
    ):
        if path.is_file():
            found.update(_from_template(path.read_text(errors="replace")))
    for folder in ("tasks", "handlers"):
        for path in (
            sorted((role_dir / folder).rglob("*.y*ml")) if (role_dir / folder).is_dir() else []
        ):
            try:
                found.update(_walk(yaml.safe_load(path.read_text())))
            except yaml.YAMLError:
                continue  # a task file Ansible itself would refuse; nothing to learn here
    return sorted(m for m in found if m.kind != own_kind)
