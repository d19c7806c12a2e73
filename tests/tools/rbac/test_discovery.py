"""Every rule is checked before it is written: a group or resource the cluster's API
discovery does not serve is dropped and reported, and no wildcard — however a record or
a request path spelled it — is ever written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

import pytest

from runner.kube import errors as kube_errors
from runner.rbac import rules
from runner.tools.rbac import catalog
from tests.tools.rbac import support
from tests.tools.rbac.support import CLUSTER_ROLE, denial, record, use

READ = use("", "configmaps", "get", "ns1")


@pytest.mark.parametrize(
    ("group", "resource", "expected"),
    [
        pytest.param("apps", "deployments", "", id="served"),
        pytest.param("apps", "deployments/status", "", id="served-subresource"),
        pytest.param("", "pods/exec", "", id="served-core-subresource"),
        pytest.param(support.PROBE_GROUP, "probes/finalizers", "", id="finalizers-of-served"),
        pytest.param("", "widgets", "core widgets is not served", id="unknown-resource"),
        pytest.param("apps", "deployments/exec", "apps deployments/exec is not", id="unknown-sub"),
        pytest.param("example.invalid", "widgets", "API group example.invalid is not", id="group"),
        pytest.param("", "widgets/finalizers", "core widgets/finalizers is not", id="finalizers"),
    ],
)
def test_catalog_knows_what_discovery_serves(group: str, resource: str, expected: str) -> None:
    known = catalog.read(support.discovery(), groups={"", "apps", group, support.PROBE_GROUP})
    problem = known.problem(rules.Use(group=group, resource=resource, verb="get"))
    if expected:
        assert expected in problem, f"expected a problem with {expected!r}, saw {problem!r}"
    else:
        assert problem == "", f"expected {group} {resource} served, saw {problem!r}"


SPELLED: list[Any] = [
    pytest.param(use("", "*", "get", "ns1"), id="resource-star"),
    pytest.param(use("", '"*"', "get", "ns1"), id="resource-quoted-star"),
    pytest.param(use("", "%2A", "get", "ns1"), id="resource-percent-star"),
    pytest.param(use("", "'*'", "list", "ns1"), id="resource-single-quoted-star"),
    pytest.param(use("", "configmaps/*", "get", "ns1"), id="subresource-star"),
    pytest.param(use("*", "deployments", "get", "ns1"), id="group-star"),
    pytest.param(use('"*"', "deployments", "get", "ns1"), id="group-quoted-star"),
    pytest.param(use("", "configmaps", "*", "ns1"), id="verb-star"),
    pytest.param(use("", "configmaps", "escalate", "ns1"), id="verb-of-no-request"),
    pytest.param(use("", "configmaps", "get", "*"), id="namespace-star"),
    pytest.param(use("", "configmaps\n      - '*'", "get", "ns1"), id="resource-with-a-line"),
    pytest.param(use("", "Secrets", "get", "ns1"), id="resource-upper-case"),
    pytest.param(use("", "widgets", "get", "ns1"), id="resource-not-served"),
    pytest.param(use("example.invalid", "widgets", "get"), id="group-not-served"),
    pytest.param(denial("", "*", "get", "ns1"), id="denied-star"),
    pytest.param(denial("example.invalid", "widgets", "get"), id="denied-not-served"),
]


@pytest.mark.parametrize("entry", SPELLED)
def test_an_entry_no_rule_may_hold_is_dropped_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, Any]
) -> None:
    denied = "task" in entry
    snapshot = record(uses=[READ], denied=[entry]) if denied else record(uses=[READ, entry])

    seen = support.run(tmp_path, capsys, snapshot=snapshot, role=CLUSTER_ROLE)

    assert seen.code == 0, f"expected exit 0, saw {seen.code}: {seen.err}"
    written = seen.written()
    expected = {("ClusterRole", ""): set(), ("Role", "ns1"): {("", "configmaps", "get")}}
    assert written == expected, f"expected only the served read written, {expected}; saw {written}"
    dropped = [r for r in seen.remarks() if "dropped, not granted" in r]
    assert len(dropped) == 1, f"expected the entry reported as dropped, saw {seen.remarks()}"


@pytest.mark.parametrize("entry", SPELLED)
def test_grant_denied_never_offers_an_entry_no_rule_may_hold(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    terminal: tuple[TextIO, int],
    entry: dict[str, Any],
) -> None:
    reader, controller = terminal
    os.write(controller, b"y\n" * 4)  # whatever is asked, the answer is yes

    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[{**entry, "task": "t"}]),
        grant_denied=True,
        terminal=reader,
    )

    assert "Grant it" not in seen.err, f"expected no question, saw {seen.err!r}"
    written = seen.written()
    expected = {("ClusterRole", ""): set(), ("Role", "ns1"): {("", "configmaps", "get")}}
    assert written == expected, f"expected only the served read written, {expected}; saw {written}"


def test_without_api_discovery_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(path: str) -> Any:
        raise kube_errors.TransportError(f"GET {path}: connection refused")

    seen = support.run(
        tmp_path, capsys, snapshot=record(uses=[READ]), role=CLUSTER_ROLE, fetch=unreachable
    )

    assert seen.code == 2, f"expected exit 2 (nothing could be checked), saw {seen.code}"
    assert "API discovery" in seen.err, f"expected the error to name discovery: {seen.err!r}"
    left = seen.role_file.read_text(encoding="utf-8")
    assert left == CLUSTER_ROLE, f"expected the role file untouched, saw:\n{left}"
