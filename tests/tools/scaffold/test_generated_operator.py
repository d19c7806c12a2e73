"""A project made by ``init`` + ``create api`` runs on the embedded cluster and lints clean.

The generated operator is run as its Makefile's ``run`` target runs it (``playbook-operator
run`` from the project directory, its roles on ANSIBLE_ROLES_PATH) against the shared
cluster, after its CRD is applied with ``kubectl apply -k config/crd``; its sample CR must
become Successful. The lint is the generated Makefile's: ansible-lint (production
profile, yamllint's rules included), hadolint, and ``kubectl kustomize config/default``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from runner.kube import client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from tests.tools.scaffold.support import command

ROOT = Path(__file__).resolve().parents[3]
TOOLS = Path(sys.executable).parent
#: A group of our own on the shared cluster: CRDs are cluster-wide.
DOMAIN = "scaffold.playbook-operator.test"


def run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (
        f"expected `{' '.join(argv)}` to succeed, saw exit {done.returncode}:\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


Maker = Callable[..., Path]


@pytest.fixture
def make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Maker:
    """``init`` in a new directory, then ``create api`` with each argument list given."""

    def make(*apis: tuple[str, ...]) -> Path:
        root = tmp_path / "greeter-operator"
        root.mkdir()
        assert command(root, "init", "--domain", DOMAIN, monkeypatch=monkeypatch) == 0
        for api in apis:
            assert command(root, "create", "api", *api, monkeypatch=monkeypatch) == 0, api
        return root

    return make


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return str(found.get("status"))
    return None


@pytest.mark.parametrize(
    "kind_and_flags",
    [
        pytest.param(("Greeter", "--generate-role"), id="role"),
        pytest.param(("Welcome", "--generate-playbook"), id="playbook"),
    ],
)
def test_the_generated_operator_makes_its_sample_successful(
    make_project: Maker,
    cluster: devcluster.Cluster,
    kube: client.Client,
    namespace: str,
    kind_and_flags: tuple[str, ...],
) -> None:
    kind, *flags = kind_and_flags
    project = make_project(("--group", "demo", "--version", "v1alpha1", "--kind", kind, *flags))
    kubectl = str(devcluster.resolve("kubectl"))
    env = {"KUBECONFIG": str(cluster.kubeconfig)}
    run([kubectl, "apply", "-k", "config/crd"], cwd=project, env=env)
    plural = kind.lower() + "s"
    run(
        [
            kubectl,
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            f"crd/{plural}.demo.{DOMAIN}",
        ],
        cwd=project,
        env=env,
    )
    sample_file = project / f"config/samples/demo_v1alpha1_{kind.lower()}.yaml"
    sample = yaml.safe_load(sample_file.read_text())
    operator = OperatorProcess(
        workdir=project,
        kubeconfig=cluster.kubeconfig,
        namespace=namespace,
        watches=(project / "watches.yaml").read_text(),
        env={"ANSIBLE_ROLES_PATH": str(project / "roles")},
    )
    gvk = GVK(f"demo.{DOMAIN}", "v1alpha1", kind)
    try:
        operator.start()
        kube.create(gvk, sample, namespace=namespace)
        operator.eventually(
            lambda: kube.get(gvk, name=sample["metadata"]["name"], namespace=namespace),
            describe=f"the sample {kind} to be Successful",
            until=lambda obj: condition(obj, "Successful") == "True",
            timeout=240,
        )
    finally:
        operator.stop()


@pytest.mark.parametrize(
    "apis",
    [
        pytest.param((), id="fresh-project"),
        pytest.param(
            (
                ("--group", "demo", "--version", "v1alpha1", "--kind", "Greeter"),
                (
                    "--group",
                    "demo",
                    "--version",
                    "v1",
                    "--kind",
                    "Welcome",
                    "--generate-role",
                    "--generate-playbook",
                ),
                (
                    "--group",
                    "ops",
                    "--version",
                    "v1beta1",
                    "--kind",
                    "Policy",
                    "--generate-playbook",
                    "--namespaced=false",
                ),
            ),
            id="three-apis",
        ),
    ],
)
def test_the_generated_project_lints_clean(
    make_project: Maker, cluster: devcluster.Cluster, apis: tuple[tuple[str, ...], ...]
) -> None:
    project = make_project(*apis)
    collections = str(ROOT / "runner" / "collection")
    # As the generated Makefile's lint runs it (its .ansible-lint sets the profile).
    run(
        [str(TOOLS / "ansible-lint")],
        cwd=project,
        env={"ANSIBLE_COLLECTIONS_PATH": collections, "ANSIBLE_ROLES_PATH": str(project / "roles")},
    )
    run([str(TOOLS / "hadolint"), "Dockerfile"], cwd=project)
    built = run([str(devcluster.resolve("kubectl")), "kustomize", "config/default"], cwd=project)
    kinds = [doc["kind"] for doc in yaml.safe_load_all(built) if doc]
    expected = len(apis)
    crds = kinds.count("CustomResourceDefinition")
    assert crds == expected and "Deployment" in kinds, (
        f"expected {expected} CRDs and the manager Deployment in config/default, saw {kinds}"
    )
