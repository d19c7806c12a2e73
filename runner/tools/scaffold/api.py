"""``create api``: one new kind in a project, in operator-sdk's Ansible plugin layout.

Outside the runtime flow (watch → queue → reconcile → ansible → status): it writes what
the flow reads for the new kind — the ``watches.yaml`` entry and the role or playbook —
and what the cluster needs for it — the CRD (with the status subresource), RBAC rules,
a sample CR and a molecule check::

    roles/<kind>/{tasks,defaults,meta}/main.yml, roles/<kind>/README.md   --generate-role
    roles/<kind>/meta/argument_specs.yml     the spec's fields, for the CRD and the CSV
    playbooks/<kind>.yml                                                  --generate-playbook
    config/crd/bases/<group>.<domain>_<plural>.yaml    (+ config/crd/kustomization.yaml)
    config/samples/<group>_<version>_<kind>.yaml       (+ config/samples/kustomization.yaml)
    config/rbac/<kind>_editor_role.yaml, <kind>_viewer_role.yaml  (+ rbac kustomization)
    config/rbac/role.yaml                              the manager's rules for the kind
    molecule/default/tasks/<kind>_test.yml
    watches.yaml, PROJECT      (the kind's CRD generated from its argument specs: make manifests)

Every change is worked out in memory first (names checked, the kind looked up, the
insertion markers found); only then is anything written, so a refused call leaves the
project as it was. An API that exists already changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.tools.scaffold import names, project, templates
from runner.tools.scaffold.errors import ConflictError, ScaffoldError

Printer = Callable[[str], None]

WATCH_MARKER = "# +kubebuilder:scaffold:watch"
RULES_MARKER = "# +kubebuilder:scaffold:rules"
RBAC_MARKER = "# +kubebuilder:scaffold:rbacroles"
CRD_MARKER = "# +kubebuilder:scaffold:crdkustomizeresource"
SAMPLES_MARKER = "# +kubebuilder:scaffold:manifestskustomizesamples"


@dataclass(frozen=True)
class Change:
    """One file to write: ``path`` relative to the project, its whole new ``text``."""

    path: str
    text: str
    created: bool


def _insert(text: str, *, marker: str, block: str, path: str) -> str:
    """``block`` inserted on the lines just above ``marker``'s line."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == marker:
            return "".join(lines[:index]) + block + "".join(lines[index:])
    raise ScaffoldError(
        f"{path}: the line {marker!r} is missing, so the new API cannot be added there; "
        "put it back where new entries go; nothing was written"
    )


def _add_item(text: str, *, marker: str, item: str, path: str) -> str:
    """``item`` appended to a kustomization's ``resources`` list (which ends at ``marker``)."""
    text = text.replace("resources: []\n", "resources:\n")
    return _insert(text, marker=marker, block=f"  - {item}\n", path=path)


def values(*, made: project.Project, api: names.Resource, content: str) -> dict[str, str]:
    """The placeholders of the ``api/`` (and ``webhook/``) templates for ``api``."""
    return {
        "project_name": made.name,
        "group": api.group,
        "full_group": api.full_group,
        "domain": api.domain,
        "version": api.version,
        "kind": api.kind,
        "singular": api.singular,
        "plural": api.plural,
        "scope": api.scope,
        "scope_text": "namespaced" if api.namespaced else "cluster-scoped",
        "api_version": api.api_version,
        "crd_name": api.crd_name,
        "sample_name": f"{api.singular}-sample",
        "sample_file": sample_file(api),
        "galaxy_namespace": api.full_group.replace(".", "_").replace("-", "_"),
        "content": content,
    }


def sample_file(api: names.Resource) -> str:
    return f"{api.group}_{api.version}_{api.singular}.yaml"


def crd_file(api: names.Resource) -> str:
    return f"{api.full_group}_{api.plural}.yaml"


def plan(*, made: project.Project, api: names.Resource, role: bool, playbook: bool) -> list[Change]:
    """The files ``create api`` writes for ``api``; raises when it cannot or need not."""
    existing = made.has_kind(group=api.group, kind=api.kind)
    if existing is not None:
        if existing.get("version") == api.version:
            raise ConflictError(
                f"{api.kind} ({api.api_version}) exists already in {project.PROJECT_FILE}; "
                "nothing changed",
                unchanged=True,
            )
        raise ConflictError(
            f"{api.kind} exists already in group {api.full_group} at version "
            f"{existing.get('version')}; nothing changed (another version of a kind is "
            "added by hand: a new entry under the CRD's versions)"
        )
    if not role and not playbook:
        raise ScaffoldError("nothing to generate: give --generate-role or --generate-playbook")
    root = made.root
    content = f"playbook: playbooks/{api.singular}.yml" if playbook else f"role: {api.singular}"
    filled = values(made=made, api=api, content=content)
    new: dict[str, str] = {}
    if role:
        for template in templates.tree("api/role"):
            new[f"roles/{api.singular}/{template}"] = templates.render(
                f"api/role/{template}", filled
            )
    if playbook:
        source = "api/playbook_role.yml" if role else "api/playbook.yml"
        new[f"playbooks/{api.singular}.yml"] = templates.render(source, filled)
    new[f"config/crd/bases/{crd_file(api)}"] = templates.render("api/crd.yaml", filled)
    new[f"config/samples/{sample_file(api)}"] = templates.render("api/sample.yaml", filled)
    for which in ("editor", "viewer"):
        new[f"config/rbac/{api.singular}_{which}_role.yaml"] = templates.render(
            f"api/{which}_role.yaml", filled
        )
    new[f"molecule/default/tasks/{api.singular}_test.yml"] = templates.render(
        "api/molecule_test.yml", filled
    )
    in_the_way = sorted(p for p in new if (root / p).exists())
    if role and (root / "roles" / api.singular).exists():
        in_the_way.insert(0, f"roles/{api.singular}/")
    if in_the_way:
        raise ConflictError(
            f"{', '.join(in_the_way)} exist already; nothing changed (remove them, or "
            "choose another kind)"
        )

    def edited(path: str, edit: Callable[[str], str]) -> Change:
        try:
            text = (root / path).read_text()
        except OSError as exc:
            raise ScaffoldError(f"{path}: cannot be read ({exc}); nothing was written") from exc
        return Change(path=path, text=edit(text), created=False)

    watch = templates.render("api/watch.yaml", filled)
    rules = templates.render("api/rules.yaml", filled)
    edits = [
        edited(
            "watches.yaml",
            lambda t: _insert(t, marker=WATCH_MARKER, block=watch, path="watches.yaml"),
        ),
        edited(
            "config/rbac/role.yaml",
            lambda t: _insert(t, marker=RULES_MARKER, block=rules, path="config/rbac/role.yaml"),
        ),
        edited(
            "config/rbac/kustomization.yaml",
            lambda t: _add_item(
                _add_item(
                    t,
                    marker=RBAC_MARKER,
                    item=f"{api.singular}_editor_role.yaml",
                    path="config/rbac/kustomization.yaml",
                ),
                marker=RBAC_MARKER,
                item=f"{api.singular}_viewer_role.yaml",
                path="config/rbac/kustomization.yaml",
            ),
        ),
        edited(
            "config/crd/kustomization.yaml",
            lambda t: _add_item(
                t,
                marker=CRD_MARKER,
                item=f"bases/{crd_file(api)}",
                path="config/crd/kustomization.yaml",
            ),
        ),
        edited(
            "config/samples/kustomization.yaml",
            lambda t: _add_item(
                t,
                marker=SAMPLES_MARKER,
                item=sample_file(api),
                path="config/samples/kustomization.yaml",
            ),
        ),
    ]
    return [
        *(Change(path=p, text=t, created=True) for p, t in new.items()),
        *edits,
        Change(
            path=project.PROJECT_FILE, text=_project_text(made, api=api, role=role), created=False
        ),
    ]


def _project_text(made: project.Project, *, api: names.Resource, role: bool) -> str:
    """PROJECT with ``api``'s entry added (and, with a role, listed for ``generate crd``)."""
    entry = {
        "api": {"crdVersion": "v1", "namespaced": api.namespaced},
        "domain": api.domain,
        "group": api.group,
        "kind": api.kind,
        "version": api.version,
    }
    return project.render_project_file(
        domain=made.domain,
        name=made.name,
        resources=(*made.resources, entry),
        plugins=_generated_crd(made.plugins, api=api) if role else made.plugins,
    )


def _generated_crd(plugins: Mapping[str, Any], *, api: names.Resource) -> dict[str, Any]:
    """``plugins`` with ``api`` listed under ours: `make manifests` writes its CRD from its
    role's meta/argument_specs.yml (``playbook-operator generate crd``)."""
    kept = dict(plugins)
    ours = dict(kept.get(project.CRDS_PLUGIN) or {})
    listed = [r for r in ours.get("resources") or [] if isinstance(r, dict)]
    ours["resources"] = [*listed, {"group": api.group, "version": api.version, "kind": api.kind}]
    kept[project.CRDS_PLUGIN] = ours
    return kept


def create(
    *,
    root: Path,
    group: str,
    version: str,
    kind: str,
    namespaced: bool,
    role: bool,
    playbook: bool,
    out: Printer,
) -> list[Change]:
    """Add the API to the project in ``root``; returns what was written."""
    made = project.read(root)
    api = names.resource(
        group=group, domain=made.domain, version=version, kind=kind, namespaced=namespaced
    )
    changes = plan(made=made, api=api, role=role, playbook=playbook)
    for change in changes:
        target = root / change.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change.text)
        out(f"{'wrote' if change.created else 'updated'} {change.path}")
    return changes
