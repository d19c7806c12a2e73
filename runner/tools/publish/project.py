"""What the project's ``PROJECT`` file says to the publishing commands.

Outside the runtime flow (watch → queue → reconcile → ansible → status). ``PROJECT`` is
operator-sdk's project file; plugins keep their settings under ``plugins:``, and ours
(``scaffold.project.CRDS_PLUGIN``) lists the kinds whose CRD ``generate crd`` writes from
argument specs, each with the printer columns the author wants ``kubectl get`` to show::

    plugins:
      crds.playbook-operator.io/v1alpha1:
        resources:
          - group: cache          # as in PROJECT's resources (or the full group)
            version: v1alpha1
            kind: Memcached
            printerColumns:       # additionalPrinterColumns, as the CRD writes them
              - name: Size
                type: integer
                jsonPath: .status.size
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.tools.publish.errors import PublishError
from runner.tools.scaffold import project as scaffolded


@dataclass(frozen=True)
class Generated:
    """A kind whose CRD is generated: its printer columns (empty: the file's are kept)."""

    group: str
    version: str
    kind: str
    printer_columns: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Project:
    """The parts of ``PROJECT`` the publishing commands use."""

    name: str
    domain: str
    resources: tuple[Mapping[str, Any], ...]
    generated: tuple[Generated, ...]

    def generates(self, *, group: str, version: str, kind: str) -> Generated | None:
        """The plugin's entry for ``kind`` (``group`` is the full API group)."""
        for item in self.generated:
            if item.kind == kind and item.version == version and group in self.groups(item.group):
                return item
        return None

    def namespaced(self, *, group: str, kind: str) -> bool:
        for entry in self.resources:
            if entry.get("kind") == kind and group in self.groups(str(entry.get("group", ""))):
                return bool((entry.get("api") or {}).get("namespaced", True))
        return True

    def groups(self, group: str) -> tuple[str, ...]:
        """``group`` as given and as ``<group>.<domain>``."""
        return (group, f"{group}.{self.domain}") if self.domain else (group,)


def read(root: Path) -> Project:
    path = root / scaffolded.PROJECT_FILE
    try:
        raw = yaml.safe_load(path.read_text()) if path.exists() else {}
    except (OSError, yaml.YAMLError) as exc:
        raise PublishError(f"{path}: cannot be read: {exc}") from exc
    if not isinstance(raw, dict):
        raise PublishError(f"{path}: expected a mapping")
    plugin = (raw.get("plugins") or {}).get(scaffolded.CRDS_PLUGIN) or {}
    generated: list[Generated] = []
    where = f"{path}: plugins.{scaffolded.CRDS_PLUGIN}.resources"
    for number, item in enumerate(plugin.get("resources") or [], start=1):
        if not isinstance(item, dict) or not all(k in item for k in ("group", "version", "kind")):
            raise PublishError(f"{where}[{number - 1}]: needs group, version, kind")
        columns = item.get("printerColumns") or []
        if not isinstance(columns, list) or not all(
            isinstance(c, dict) and {"name", "type", "jsonPath"} <= c.keys() for c in columns
        ):
            raise PublishError(
                f"{where}[{number - 1}].printerColumns: a list of "
                "columns, each with name, type and jsonPath"
            )
        generated.append(
            Generated(
                group=str(item["group"]),
                version=str(item["version"]),
                kind=str(item["kind"]),
                printer_columns=tuple(columns),
            )
        )
    return Project(
        name=str(raw.get("projectName") or root.resolve().name),
        domain=str(raw.get("domain") or ""),
        resources=tuple(r for r in raw.get("resources") or [] if isinstance(r, dict)),
        generated=tuple(generated),
    )
