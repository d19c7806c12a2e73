"""A project from ``init`` + ``create api`` is ready to publish: the kind is listed for
``generate crd`` in PROJECT, its role has argument specs, and the CRD and the base CSV
generate from them (the Go tools' part is in test_bundle.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.tools.publish import crd, csv
from tests.tools.publish.support import load
from tests.tools.scaffold.support import command


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "greeter-operator"
    root.mkdir()
    for argv in (
        ("init", "--domain", "example.com"),
        ("create", "api", "--group", "demo", "--version", "v1alpha1", "--kind", "Greeter"),
    ):
        code = command(root, *argv, monkeypatch=monkeypatch)
        assert code == 0, f"expected {argv} to succeed, saw exit {code}"
    return root


def test_create_api_opts_the_kind_in(project: Path) -> None:
    plugins = load(project / "PROJECT")["plugins"]
    assert plugins["crds.playbook-operator.io/v1alpha1"] == {
        "resources": [{"group": "demo", "version": "v1alpha1", "kind": "Greeter"}]
    }, f"saw plugins {plugins}"
    assert "manifests.sdk.operatorframework.io/v2" in plugins


def test_the_scaffolded_kind_generates(project: Path) -> None:
    watches = project / "watches.yaml"
    outcomes = crd.generate(project, watches_file=watches, out=lambda _: None)
    assert [o.action for o in outcomes] == ["wrote"], outcomes
    document: Any = load(project / "config/crd/bases/demo.example.com_greeters.yaml")
    spec = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["greeting"]["type"] == "string"
    assert "x-kubernetes-preserve-unknown-fields" not in spec
    path = csv.generate(project, watches_file=watches, version="0.0.1", out=lambda _: None)
    (owned,) = load(path)["spec"]["customresourcedefinitions"]["owned"]
    assert owned["resources"] == [{"kind": "ConfigMap", "name": "", "version": "v1"}]
    assert [d["path"] for d in owned["specDescriptors"]] == ["greeting"]
    assert path == project / "config/manifests/bases/greeter-operator.clusterserviceversion.yaml"
