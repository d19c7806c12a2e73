"""``generate csv``: the base ClusterServiceVersion, saying what the operator is.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``make bundle``
runs this, then ``operator-sdk generate bundle`` on ``kustomize build config/manifests``,
which adds what kustomize knows (the install strategy, permissions and clusterPermissions
from config/rbac, alm-examples from config/samples) to the base written here:

- one owned CRD per watched kind: displayName, description (the argument specs'
  ``short_description``), ``resources`` (the kinds its role manages,
  :mod:`~runner.tools.publish.manages`), spec descriptors from the argument specs and
  status descriptors from the CRD's status schema (:mod:`~runner.tools.publish.descriptors`);
- ``relatedImages`` from the manager's ``RELATED_IMAGE_*`` environment variables
  (config/manager/manager.yaml);
- the operator's version, and, for a new file, the fields OperatorHub asks for (an icon,
  maintainers, links, provider, install modes) with placeholders to edit.

Hand edits survive: a field already in the file is never overwritten, except the version
and the relatedImages that the manager's environment names; generated owned CRDs,
descriptors and resources are only added where the file has none for that name or path.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner.kube import types as kube
from runner.tools.publish import argspecs, crd, descriptors, documents, manages, project
from runner.tools.scaffold import names

BASES = "config/manifests/bases"
MANAGER = "config/manager/manager.yaml"
RELATED_IMAGE = "RELATED_IMAGE_"
HEADER = """\
The base ClusterServiceVersion: `playbook-operator generate csv` (make bundle) adds owned
CRDs, descriptors, resources and relatedImages to it and sets the version; edits made
here by hand are kept. `operator-sdk generate bundle` adds the install strategy,
permissions and alm-examples when it writes bundle/."""
# The OperatorHub icon of a new project: a plain mark, to replace with the operator's own.
ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">'
    '<rect width="64" height="64" rx="12" fill="#326ce5"/>'
    '<path d="M14 46 30 14h4l16 32h-7l-3-7H24l-3 7zm12-13h12l-6-13z" fill="#fff"/></svg>'
)

Printer = Callable[[str], None]
Document = dict[str, Any]


def path_of(root: Path, name: str) -> Path:
    return root / BASES / f"{name}.clusterserviceversion.yaml"


def skeleton(*, name: str, display: str) -> Document:
    """A new base CSV with OperatorHub's required fields, each a placeholder to edit."""
    icon = base64.b64encode(ICON_SVG.encode()).decode()
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "annotations": {"alm-examples": "[]", "capabilities": "Basic Install"},
            "name": f"{name}.v0.0.0",
            "namespace": "placeholder",
        },
        "spec": {
            "apiservicedefinitions": {},
            "customresourcedefinitions": {"owned": []},
            "description": f"{display}: a Kubernetes operator written as Ansible roles.",
            "displayName": display,
            "icon": [{"base64data": icon, "mediatype": "image/svg+xml"}],
            "install": {"spec": {"deployments": None}, "strategy": ""},
            "installModes": [
                {"supported": False, "type": "OwnNamespace"},
                {"supported": False, "type": "SingleNamespace"},
                {"supported": False, "type": "MultiNamespace"},
                {"supported": True, "type": "AllNamespaces"},
            ],
            "keywords": [name],
            "links": [{"name": display, "url": f"https://{name}.domain"}],
            "maintainers": [{"email": "your@email.com", "name": "Maintainer Name"}],
            "maturity": "alpha",
            "minKubeVersion": "1.25.0",
            "provider": {"name": "Provider Name", "url": "https://your.domain"},
            "version": "0.0.0",
        },
    }


def owned_entry(root: Path, *, kind: crd.Kind | crd.Outcome, watch_role: Path | None) -> Document:
    """The generated owned-CRD description of one watched kind."""
    gvk = kind.gvk
    found = crd.find_crd(root, gvk)
    crd_doc = next(
        (
            d
            for d in (found[1] if found else [])
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ),
        None,
    )
    plural = ((crd_doc or {}).get("spec") or {}).get("names", {}).get("plural") or names.plural(
        gvk.kind
    )
    schema = _schema(crd_doc, gvk.version)
    status = (schema.get("properties") or {}).get("status")
    entry: Document = {
        "name": f"{plural}.{gvk.group}",
        "version": gvk.version,
        "kind": gvk.kind,
        "displayName": descriptors.display_name(gvk.kind),
        "description": " ".join(str(schema.get("description") or f"A {gvk.kind}.").split()),
    }
    if watch_role is not None:
        managed = manages.kinds(watch_role, own_kind=gvk.kind)
        if managed:
            entry["resources"] = [m.reference() for m in managed]
    if isinstance(kind, crd.Kind):
        known = (schema.get("properties") or {}).get("spec")
        spec = argspecs.read(
            kind.spec_file, snake_case=kind.watch.snake_case_parameters, known=known
        )
        entry["description"] = spec.short_description or entry["description"]
        entry["specDescriptors"] = list(descriptors.spec_descriptors(spec.options))
    entry["statusDescriptors"] = list(descriptors.status_descriptors(status))
    return entry


def _schema(crd_doc: Document | None, version: str) -> Document:
    for item in ((crd_doc or {}).get("spec") or {}).get("versions") or []:
        if item.get("name") == version:
            return ((item.get("schema") or {}).get("openAPIV3Schema")) or {}
    return {}


def merge_owned(current: Document, generated: Document) -> Document:
    """``current`` (the file's) with what it lacks taken from ``generated``."""
    merged = copy.deepcopy(current)
    for key, value in generated.items():
        if key not in merged:
            merged[key] = copy.deepcopy(value)
        elif key in ("specDescriptors", "statusDescriptors"):
            paths = {d.get("path") for d in merged[key] or []}
            merged[key] = [*(merged[key] or []), *(d for d in value if d["path"] not in paths)]
        elif key == "resources":
            kinds = {r.get("kind") for r in merged[key] or []}
            merged[key] = [*(merged[key] or []), *(r for r in value if r["kind"] not in kinds)]
    return merged


def related_images(root: Path) -> list[dict[str, str]]:
    """``RELATED_IMAGE_<NAME>`` variables of the manager's containers, as relatedImages."""
    found: list[dict[str, str]] = []
    path = root / MANAGER
    docs = documents.read_all(path) if path.exists() else []
    for doc in docs:
        pod = ((doc or {}).get("spec") or {}).get("template", {}).get("spec") or {}
        for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            for env in container.get("env") or []:
                name, value = str(env.get("name", "")), env.get("value")
                if name.startswith(RELATED_IMAGE) and isinstance(value, str) and value:
                    short = name[len(RELATED_IMAGE) :].lower().replace("_", "-")
                    found.append({"name": short, "image": value})
    return found


def build(
    root: Path,
    *,
    current: Document | None,
    made: project.Project,
    version: str,
    kinds: list[crd.Kind | crd.Outcome],
    roles: Mapping[kube.GVK, Path | None],
) -> Document:
    """The base CSV: ``current`` (or a new skeleton) with the generated parts added."""
    display = " ".join(w.capitalize() for w in made.name.split("-"))
    csv = copy.deepcopy(current) if current else skeleton(name=made.name, display=display)
    spec = csv.setdefault("spec", {})
    owned: list[Document] = (
        spec.setdefault("customresourcedefinitions", {}).setdefault("owned", []) or []
    )
    for item in kinds:  # a kind without argument specs gets an entry with no spec descriptors
        generated = owned_entry(root, kind=item, watch_role=roles.get(item.gvk))
        index = next(
            (
                i
                for i, o in enumerate(owned)
                if (o.get("name"), o.get("version")) == (generated["name"], generated["version"])
            ),
            None,
        )
        if index is None:
            owned.append(generated)
        else:
            owned[index] = merge_owned(owned[index], generated)
    spec["customresourcedefinitions"]["owned"] = owned
    images = related_images(root)
    if images:
        named = {i["name"] for i in images}
        spec["relatedImages"] = [
            *(i for i in spec.get("relatedImages") or [] if i.get("name") not in named),
            *images,
        ]
    spec["version"] = version
    csv.setdefault("metadata", {})["name"] = f"{made.name}.v{version}"
    return csv


def generate(
    root: Path,
    *,
    watches_file: Path,
    roles_path: tuple[str, ...] = (),
    version: str,
    out: Printer,
) -> Path:
    """Write (or update) the base CSV of the project in ``root``; returns its path."""
    root = root.resolve()
    made = project.read(root)
    loaded = crd.load_watches(root, watches_file=watches_file, roles_path=roles_path)
    kinds = list(crd.kinds(loaded))
    path = path_of(root, made.name)
    docs = documents.read_all(path) if path.exists() else []
    current = next(
        (d for d in docs if isinstance(d, dict) and d.get("kind") == "ClusterServiceVersion"), None
    )
    roles = {w.gvk: (w.role.path if w.role else None) for w in loaded}
    csv = build(root, current=current, made=made, version=version, kinds=kinds, roles=roles)
    documents.write(path, header=HEADER, docs=[csv])
    out(f"{'updated' if current else 'wrote'} {path.relative_to(root)}")
    return path
