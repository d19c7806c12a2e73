"""``generate csv`` writes the base ClusterServiceVersion from the project: owned CRDs
with descriptors from the argument specs and the kinds the role manages, relatedImages
from the manager's RELATED_IMAGE_* variables; a second run keeps every hand edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.tools.publish import crd, csv, descriptors
from tests.tools.publish.support import load, make_project

MANAGER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
spec:
  template:
    spec:
      containers:
        - name: manager
          image: controller:latest
          env:
            - name: RELATED_IMAGE_RACK_SERVER
              value: example.com/rack-server:1.0
            - name: WATCH_NAMESPACE
              value: ""
"""
TEMPLATE = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: '{{ name }}'\n"
TASKS = """\
---
- name: Service
  kubernetes.core.k8s:
    definition:
      apiVersion: v1
      kind: Service
- name: Read the pods
  kubernetes.core.k8s_info:
    api_version: v1
    kind: Pod
"""


def generate(root: Path, version: str = "0.1.0") -> Any:
    crd.generate(root, watches_file=root / "watches.yaml", out=lambda _: None)
    path = csv.generate(
        root, watches_file=root / "watches.yaml", version=version, out=lambda _: None
    )
    return load(path)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_project(tmp_path)
    (root / "config/manager").mkdir(parents=True)
    (root / "config/manager/manager.yaml").write_text(MANAGER)
    (root / "roles/rack/templates").mkdir()
    (root / "roles/rack/templates/deployment.yaml.j2").write_text(TEMPLATE)
    (root / "roles/rack/tasks/main.yml").write_text(TASKS)
    return root


def owned(document: Any) -> Any:
    (entry,) = document["spec"]["customresourcedefinitions"]["owned"]
    return entry


def descriptor(entry: Any, path: str, which: str = "specDescriptors") -> Any:
    return next((d for d in entry[which] if d["path"] == path), None)


def test_new_csv_says_what_the_operator_is(root: Path) -> None:
    document = generate(root)
    entry = owned(document)
    assert (entry["name"], entry["version"], entry["kind"]) == (
        "racks.shop.example.com",
        "v1alpha1",
        "Rack",
    )
    assert entry["displayName"] == "Rack"
    assert entry["description"] == "A rack of items."
    assert entry["resources"] == [
        {"kind": "Deployment", "name": "", "version": "v1"},
        {"kind": "Service", "name": "", "version": "v1"},
    ], "expected the template's and the task's kinds, not the k8s_info read"
    assert document["spec"]["relatedImages"] == [
        {"name": "rack-server", "image": "example.com/rack-server:1.0"}
    ]
    assert document["metadata"]["name"] == "rack-operator.v0.1.0"
    assert document["spec"]["version"] == "0.1.0"
    assert document["spec"]["icon"][0]["mediatype"] == "image/svg+xml"
    assert descriptor(entry, "conditions", "statusDescriptors")["x-descriptors"] == [
        descriptors.CONDITIONS
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("size", ["urn:alm:descriptor:com.tectonic.ui:podCount"], id="size-podcount"),
        pytest.param(
            "colour",
            [
                "urn:alm:descriptor:com.tectonic.ui:select:red",
                "urn:alm:descriptor:com.tectonic.ui:select:green",
            ],
            id="choices-select",
        ),
        pytest.param("enabled", ["urn:alm:descriptor:com.tectonic.ui:booleanSwitch"], id="bool"),
        pytest.param("httpURL", ["urn:alm:descriptor:com.tectonic.ui:text"], id="text"),
        pytest.param(
            "placement.zoneName", ["urn:alm:descriptor:com.tectonic.ui:text"], id="nested"
        ),
    ],
)
def test_spec_descriptors_follow_the_argument_specs(
    root: Path, path: str, expected: list[str]
) -> None:
    found = descriptor(owned(generate(root)), path)
    assert found is not None and found.get("x-descriptors") == expected, (
        f"expected {path} with {expected}, saw {found}"
    )


def test_hand_edits_survive_regeneration(root: Path) -> None:
    path = csv.generate(
        root, watches_file=root / "watches.yaml", version="0.1.0", out=lambda _: None
    )
    document = load(path)
    document["spec"]["description"] = "Racks, by hand."
    document["spec"]["maintainers"] = [{"name": "Ann", "email": "ann@example.com"}]
    document["metadata"]["annotations"]["categories"] = "Storage"
    entry = owned(document)
    entry["displayName"] = "Storage Rack"
    size = descriptor(entry, "size")
    size["displayName"] = "Rack size"
    size["x-descriptors"] = ["urn:alm:descriptor:com.tectonic.ui:number"]
    entry["specDescriptors"].remove(descriptor(entry, "colour"))
    entry["statusDescriptors"].append({"path": "ready", "displayName": "Ready"})
    entry["resources"].append({"kind": "ConfigMap", "name": "", "version": "v1"})
    path.write_text(yaml.safe_dump(document))

    again = generate(root, version="0.2.0")
    entry = owned(again)
    assert again["spec"]["description"] == "Racks, by hand."
    assert again["spec"]["maintainers"] == [{"name": "Ann", "email": "ann@example.com"}]
    assert again["metadata"]["annotations"]["categories"] == "Storage"
    assert entry["displayName"] == "Storage Rack"
    assert descriptor(entry, "size") == {
        "displayName": "Rack size",
        "path": "size",
        "description": "How many items.",
        "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:number"],
    }, "a hand-edited descriptor was regenerated"
    assert descriptor(entry, "colour") is not None, "a descriptor the specs give is added back"
    assert descriptor(entry, "ready", "statusDescriptors") == {
        "path": "ready",
        "displayName": "Ready",
    }
    assert [r["kind"] for r in entry["resources"]] == ["Deployment", "Service", "ConfigMap"]
    assert again["spec"]["version"] == "0.2.0"
    assert again["metadata"]["name"] == "rack-operator.v0.2.0"


def test_regeneration_is_stable(root: Path) -> None:
    generate(root)
    path = csv.path_of(root, "rack-operator")
    first = path.read_text()
    generate(root)
    assert path.read_text() == first, "a second run changed the base CSV"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param("maxConnections", "Max Connections", id="camel"),
        pytest.param("memoryLimitMB", "Memory Limit MB", id="acronym-at-the-end"),
        pytest.param("targetCPUUtilization", "Target CPU Utilization", id="acronym-inside"),
    ],
)
def test_display_names(field: str, expected: str) -> None:
    assert descriptors.display_name(field) == expected
