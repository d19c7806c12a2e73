"""The Memcached CRD generated from roles/memcached/meta/argument_specs.yml, served by the
API server, refuses what the argument specs refuse (``size: "three"``) and accepts the
samples.

The CRD is regenerated in a copy of this repository's files, as ``make manifests`` does,
and applied under a group of the test's own (the shared cluster's Memcached CRD belongs
to tests/memcached).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from runner.tools.publish import crd

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def served(cluster: devcluster.Cluster, tmp_path: Path) -> Any:
    """The generated Memcached CRD, renamed into a group of its own, in the cluster."""
    for part in ("watches.yaml", "PROJECT", "roles", "config/crd"):
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part)
        else:
            shutil.copy(source, tmp_path / part)
    outcomes = crd.generate(tmp_path, watches_file=tmp_path / "watches.yaml", out=lambda _: None)
    written = [o for o in outcomes if o.gvk.kind == "Memcached" and o.action == "wrote"]
    assert written and written[0].path is not None, f"expected the CRD written, saw {outcomes}"
    document = yaml.safe_load(written[0].path.read_text())
    group = f"publish-{uuid.uuid4().hex[:8]}.example.com"
    document["spec"]["group"] = group
    document["metadata"]["name"] = f"memcacheds.{group}"
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(document))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/memcacheds.{group}"
    )
    yield group
    cluster.kubectl("delete", "crd", f"memcacheds.{group}", "--ignore-not-found", check=False)


def create(cluster: devcluster.Cluster, *, group: str, spec: dict[str, Any]) -> Any:
    body = {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": spec,
    }
    return cluster.kubectl(
        "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(body), check=False
    )


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        pytest.param({"size": "three"}, "spec.size", id="size-as-a-word"),
        pytest.param({"tolerations": [{"operator": "Maybe"}]}, "operator", id="not-a-choice"),
        pytest.param({"monitoring": {"enabled": "yes"}}, "monitoring.enabled", id="not-a-bool"),
    ],
)
def test_generated_crd_refuses_what_the_specs_refuse(
    cluster: devcluster.Cluster, served: str, spec: dict[str, Any], complaint: str
) -> None:
    answer = create(cluster, group=served, spec=spec)
    assert answer.returncode != 0 and complaint in answer.stderr, (
        f"expected {spec} refused naming {complaint!r}; saw rc={answer.returncode} "
        f"{answer.stderr.strip()}"
    )


def test_generated_crd_accepts_the_samples(cluster: devcluster.Cluster, served: str) -> None:
    for sample in sorted((REPO / "config/samples").glob("cache_v1alpha1_*.yaml")):
        spec = yaml.safe_load(sample.read_text())["spec"]
        answer = create(cluster, group=served, spec=spec)
        assert answer.returncode == 0, f"expected {sample.name} accepted, saw {answer.stderr}"
