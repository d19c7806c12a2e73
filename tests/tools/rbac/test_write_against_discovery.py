"""``playbook-operator rbac --write`` against the embedded cluster's own API discovery
(``--kubeconfig``): a denied request, names spelled as wildcards, and requests made in
one namespace are written as nothing, nothing and a Role of that namespace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import devcluster
from runner import cli
from tests.tools.rbac import support
from tests.tools.rbac.support import CLUSTER_ROLE, Grant, Scope, denial, record, use

READ = use("", "configmaps", "get", "ns1")
ONLY_THE_READ: dict[Scope, set[Grant]] = {
    ("ClusterRole", ""): set(),
    ("Role", "ns1"): {("", "configmaps", "get")},
}


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [
        pytest.param(
            record(uses=[READ], denied=[denial("apps", "deployments", "patch", "ns1", "t")]),
            ONLY_THE_READ,
            id="denied-not-written",
        ),
        pytest.param(
            record(
                uses=[
                    READ,
                    use("", "%2A", "get", "ns1"),
                    use("", '"*"', "list"),
                    use("*", "deployments", "get"),
                    use("", "secrets", "*", "ns1"),
                    use("example.invalid", "widgets", "get", "ns1"),
                ]
            ),
            ONLY_THE_READ,
            id="wildcards-and-unknown-dropped",
        ),
        pytest.param(
            record(uses=[READ, use("", "namespaces", "list")]),
            {
                ("ClusterRole", ""): {("", "namespaces", "list")},
                ("Role", "ns1"): {("", "configmaps", "get")},
            },
            id="namespaced-in-a-role",
        ),
    ],
)
def test_write_checks_rules_against_the_clusters_discovery(
    cluster: devcluster.Cluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    snapshot: dict[str, Any],
    expected: dict[Scope, set[Grant]],
) -> None:
    (tmp_path / "record.json").write_text(json.dumps(snapshot), encoding="utf-8")
    role_file = tmp_path / "role.yaml"
    role_file.write_text(CLUSTER_ROLE, encoding="utf-8")

    code = cli.main(
        [
            "rbac",
            "--from",
            str(tmp_path / "record.json"),
            "--role-file",
            str(role_file),
            "--write",
            f"--kubeconfig={cluster.kubeconfig}",
        ]
    )

    out = capsys.readouterr()
    assert code == 0, f"expected exit 0, saw {code}: {out.err}"
    written = support.Outcome(code=code, out=out.out, err=out.err, role_file=role_file).written()
    assert written == expected, f"expected documents {expected}, saw {written}\n{out.out}"
