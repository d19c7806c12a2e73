"""A project on disk: ``init`` writes one, and its ``PROJECT`` file says what it holds.

Outside the runtime flow (watch → queue → reconcile → ansible → status): this writes the
files the flow later reads (watches.yaml, roles/, playbooks/) and everything around them
(config/, molecule/, Makefile, Dockerfile), in operator-sdk's Ansible layout. The
runtime itself is not copied: the Makefile runs the Playbook Operator installation that
``init`` ran from (:func:`runtime`).

``PROJECT`` is operator-sdk's project file (domain, project name, one entry per API),
kept in its format so that operator-sdk's own commands keep working on the project.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import runner
from runner.tools.scaffold import names, templates
from runner.tools.scaffold.errors import ConflictError, ScaffoldError

PROJECT_FILE = "PROJECT"
LAYOUT = "ansible.sdk.operatorframework.io/v1"
# Our plugin's key: the kinds whose CRD `playbook-operator generate crd` writes from their
# role's argument specs (runner.tools.publish.project reads it; `create api` adds to it).
CRDS_PLUGIN = "crds.playbook-operator.io/v1alpha1"
_SDK_PLUGINS = ("manifests.sdk.operatorframework.io/v2", "scorecard.sdk.operatorframework.io/v2")
_HEADER = """\
# This file is used to track the info used to scaffold your project
# and allow the plugins properly work (operator-sdk's format, kept so that
# `operator-sdk` commands such as `create api` and `bundle` keep working on it).
# More info: https://book.kubebuilder.io/reference/project-config.html
"""

Printer = Callable[[str], None]


@dataclass(frozen=True)
class Project:
    """What ``PROJECT`` records: the domain, the name, and every API as written there."""

    root: Path
    domain: str
    name: str
    resources: tuple[Mapping[str, Any], ...]
    plugins: Mapping[str, Any] = field(default_factory=dict)

    def has_kind(self, *, group: str, kind: str) -> Mapping[str, Any] | None:
        """The entry of ``kind`` in ``group`` (any version), if the project has one."""
        for entry in self.resources:
            if entry.get("group") == group and entry.get("kind") == kind:
                return entry
        return None


def runtime() -> dict[str, str]:
    """Where the running Playbook Operator is installed: its scripts directory, its
    Python, its version. The generated Makefile uses these (they can be overridden)."""
    return {
        "runtime_bin": sysconfig.get_path("scripts"),
        "python": sys.executable,
        "runtime_version": runner.__version__,
    }


def read(root: Path) -> Project:
    path = root / PROJECT_FILE
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ScaffoldError(
            f"{path}: no PROJECT file; run `playbook-operator init` in {root} first"
        ) from None
    except (OSError, yaml.YAMLError) as exc:
        raise ScaffoldError(f"{path}: cannot be read: {exc}") from exc
    if not isinstance(raw, dict):
        raise ScaffoldError(f"{path}: expected a mapping, saw {type(raw).__name__}")
    resources = raw.get("resources") or []
    if not isinstance(resources, list):
        raise ScaffoldError(f"{path}: field 'resources' should be a list")
    return Project(
        root=root,
        domain=str(raw.get("domain") or ""),
        name=str(raw.get("projectName") or root.name),
        resources=tuple(r for r in resources if isinstance(r, dict)),
        plugins=_plugins(raw.get("plugins")),
    )


def _plugins(raw: object) -> dict[str, Any]:
    """PROJECT's plugin settings (kept as they are when PROJECT is written again)."""
    return dict(raw) if isinstance(raw, dict) else {}


def render_project_file(
    *,
    domain: str,
    name: str,
    resources: tuple[Mapping[str, Any], ...],
    plugins: Mapping[str, Any] | None = None,
) -> str:
    """PROJECT's text; ``plugins`` (the file's, kept) gain operator-sdk's and ours."""
    kept = dict(plugins or {})
    for key in _SDK_PLUGINS:
        kept.setdefault(key, {})
    kept.setdefault(CRDS_PLUGIN, {"resources": []})
    body: dict[str, Any] = {
        "domain": domain,
        "layout": [LAYOUT],
        "plugins": kept,
        "projectName": name,
    }
    if resources:
        body["resources"] = [dict(r) for r in resources]
    body["version"] = "3"
    return _HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False)


def _check_empty(root: Path) -> None:
    if not root.is_dir():
        raise ScaffoldError(f"{root}: not a directory")
    present = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    if present:
        shown = ", ".join(present[:5]) + (", ..." if len(present) > 5 else "")
        raise ConflictError(
            f"{root} is not empty ({shown}): init writes a new project into an empty "
            "directory (dotfiles such as .git may be there); nothing was written"
        )


def init(*, root: Path, domain: str, project_name: str | None, out: Printer) -> list[Path]:
    """Write a new project into the empty directory ``root``; returns the files written.

    The project name defaults to the directory's name. Everything is checked before
    the first file is written.
    """
    name = project_name if project_name is not None else root.resolve().name
    if project_name is None:
        try:
            names.check_label(field="--project-name", value=name)
        except ScaffoldError as exc:
            raise ScaffoldError(
                f"{exc} (the directory's name); give --project-name, a DNS-1123 label"
            ) from None
    else:
        names.project_name(name)
    names.domain(domain)
    _check_empty(root)
    values = {"project_name": name, "domain": domain, **runtime()}
    written: list[Path] = []
    for template in templates.tree("init"):
        target = root / templates.output_path(template)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(templates.render(f"init/{template}", values))
        written.append(target)
    project_file = root / PROJECT_FILE
    project_file.write_text(render_project_file(domain=domain, name=name, resources=()))
    written.append(project_file)
    for path in written:
        out(f"wrote {path.relative_to(root)}")
    return written
