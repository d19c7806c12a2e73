"""Minimal real projects for the publishing tests: a watches.yaml, a role with argument
specs, a PROJECT file, written into a temporary directory."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

WATCHES = """\
---
- version: v1alpha1
  group: shop.example.com
  kind: Rack
  role: rack
"""

PROJECT = """\
domain: example.com
layout:
- ansible.sdk.operatorframework.io/v1
plugins:
  manifests.sdk.operatorframework.io/v2: {}
  scorecard.sdk.operatorframework.io/v2: {}
  crds.playbook-operator.io/v1alpha1:
    resources:
    - group: shop
      version: v1alpha1
      kind: Rack
      printerColumns:
      - name: Size
        type: integer
        jsonPath: .spec.size
projectName: rack-operator
resources:
- api:
    crdVersion: v1
    namespaced: true
  domain: example.com
  group: shop
  kind: Rack
  version: v1alpha1
version: "3"
"""

SPECS = """\
---
argument_specs:
  main:
    short_description: A rack of items.
    description: What the rack holds.
    options:
      size:
        type: int
        default: 3
        description: How many items.
      colour:
        type: str
        choices: [red, green]
        description: [The rack's, colour.]
      max_weight_kg:
        type: float
      enabled:
        type: bool
        default: true
      labels:
        type: dict
      anything:
        type: raw
      tags:
        type: list
        elements: str
      placement:
        type: dict
        options:
          zone_name:
            type: str
            required: true
          spread:
            type: bool
      items:
        type: list
        elements: dict
        options:
          item_name:
            type: str
            required: true
          count:
            type: int
            default: 1
      http_url:
        type: str
        aliases: [httpURL]
"""


def make_project(root: Path, *, specs: str = SPECS, project: str = PROJECT) -> Path:
    """A project in ``root`` with one kind (Rack) whose role has ``specs``."""
    (root / "roles/rack/meta").mkdir(parents=True)
    (root / "roles/rack/tasks").mkdir(parents=True)
    (root / "roles/rack/tasks/main.yml").write_text("---\n[]\n")
    (root / "roles/rack/meta/argument_specs.yml").write_text(textwrap.dedent(specs))
    (root / "watches.yaml").write_text(WATCHES)
    (root / "PROJECT").write_text(project)
    (root / "config/crd/bases").mkdir(parents=True)
    (root / "config/crd/kustomization.yaml").write_text(
        "resources: []\n# +kubebuilder:scaffold:crdkustomizeresource\n"
    )
    return root


def crd_file(root: Path) -> Path:
    return root / "config/crd/bases/shop.example.com_racks.yaml"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def spec_schema(crd: Any) -> Any:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
