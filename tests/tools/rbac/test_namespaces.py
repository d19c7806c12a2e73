"""A rule is scoped as its requests were: what was used only in a namespace is granted
by a Role in that namespace, never by the ClusterRole; what was used cluster-wide (a
cluster-scoped kind, all namespaces) by the ClusterRole, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.rbac import support
from tests.tools.rbac.support import CLUSTER_ROLE, Entry, Grant, Scope, record, use

ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: manager-role
rules: []
"""
ROLE_IN_NS0 = ROLE.replace("  name: manager-role\n", "  name: manager-role\n  namespace: ns0\n")

GET_CM = ("", "configmaps", "get")
LIST_CM = ("", "configmaps", "list")
LIST_NS = ("", "namespaces", "list")
PATCH_DEPLOY = ("apps", "deployments", "patch")


@pytest.mark.parametrize(
    ("role", "uses", "expected"),
    [
        pytest.param(
            CLUSTER_ROLE,
            [use("", "configmaps", "get", "ns1"), use("", "namespaces", "list")],
            {("ClusterRole", ""): {LIST_NS}, ("Role", "ns1"): {GET_CM}},
            id="namespaced-read-in-a-role",
        ),
        pytest.param(
            CLUSTER_ROLE,
            [
                use("apps", "deployments", "patch", "ns1"),
                use("apps", "deployments", "patch", "ns2"),
            ],
            {
                ("ClusterRole", ""): set(),
                ("Role", "ns1"): {PATCH_DEPLOY},
                ("Role", "ns2"): {PATCH_DEPLOY},
            },
            id="two-namespaces-two-roles",
        ),
        pytest.param(
            CLUSTER_ROLE,
            [use("", "configmaps", "list"), use("", "configmaps", "get", "ns1")],
            {("ClusterRole", ""): {LIST_CM}, ("Role", "ns1"): {GET_CM}},
            id="all-namespaces-list-stays-cluster-wide",
        ),
        pytest.param(
            CLUSTER_ROLE,
            [use("", "configmaps", "get"), use("", "configmaps", "get", "ns1")],
            {("ClusterRole", ""): {GET_CM}},
            id="covered-cluster-wide-no-role",
        ),
        pytest.param(
            ROLE,
            [use("", "configmaps", "get", "ns1"), use("", "configmaps", "list")],
            {("Role", ""): {GET_CM, LIST_CM}},
            id="a-role-naming-no-namespace-takes-all",
        ),
        pytest.param(
            ROLE_IN_NS0,
            [use("", "configmaps", "get", "ns0"), use("", "configmaps", "get", "ns1")],
            {("Role", "ns0"): {GET_CM}, ("Role", "ns1"): {GET_CM}},
            id="a-role-in-a-namespace-keeps-its-own",
        ),
    ],
)
def test_a_rule_is_written_in_the_scope_its_requests_had(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    role: str,
    uses: list[Entry],
    expected: dict[Scope, set[Grant]],
) -> None:
    seen = support.run(tmp_path, capsys, snapshot=record(uses=uses), role=role)

    assert seen.code == 0, f"expected exit 0, saw {seen.code}: {seen.err}"
    written = seen.written()
    assert written == expected, f"expected documents {expected}, saw {written}"


def test_a_namespaced_request_is_never_a_cluster_role_grant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespaced = [
        use("", "secrets", "get", "ns1"),
        use("", "pods/exec", "create", "ns1"),
        use("apps", "deployments", "patch", "ns2"),
    ]
    seen = support.run(tmp_path, capsys, snapshot=record(uses=namespaced), role=CLUSTER_ROLE)

    wide = seen.written().get(("ClusterRole", ""))
    assert wide == set(), f"expected an empty ClusterRole, saw {wide}"


def test_a_written_file_checks_clean_and_a_wider_one_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = record(uses=[use("", "configmaps", "get", "ns1"), use("", "namespaces", "list")])
    support.run(tmp_path, capsys, snapshot=snapshot, role=CLUSTER_ROLE)
    again = support.run(tmp_path, capsys, snapshot=snapshot, flags=("--check",))
    assert again.code == 0, f"expected the written file to check clean, saw {again.remarks()}"

    wider = CLUSTER_ROLE.replace(
        "rules: []\n",
        "rules:\n  - apiGroups: ['']\n    resources: [configmaps, namespaces]\n"
        "    verbs: [get, list]\n",
    )
    seen = support.run(tmp_path, capsys, snapshot=snapshot, role=wider, flags=("--check",))
    said = (
        f"# wider in {tmp_path / 'role.yaml'} than used: core configmaps get is granted "
        "cluster-wide, used only in namespaces (--write narrows it to Roles)"
    )
    assert said in seen.remarks(), f"expected {said!r}, saw {seen.remarks()}"
    unused = f"# unused in {tmp_path / 'role.yaml'}: core configmaps list"
    assert unused in seen.remarks(), f"expected {unused!r}, saw {seen.remarks()}"
