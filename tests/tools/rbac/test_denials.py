"""A request the API server denied is reported with the rule it would need, never
written, unless the author passes ``--grant-denied`` and says yes to that rule at a
terminal; without a terminal the flag refuses before anything is written."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TextIO

import pytest

from tests.tools.rbac import support
from tests.tools.rbac.support import CLUSTER_ROLE, denial, record, use

TASK = "Label the web Deployment"
READ = use("", "configmaps", "get", "ns1")
PATCH = denial("apps", "deployments", "patch", "ns1", task=TASK)
CREATE = denial("", "services", "create", "ns1", task="Expose it")


def test_a_denied_request_is_reported_with_its_rule_and_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = support.run(
        tmp_path, capsys, snapshot=record(uses=[READ], denied=[PATCH]), role=CLUSTER_ROLE
    )

    assert seen.code == 0, f"expected exit 0, saw {seen.code}: {seen.err}"
    written = seen.written()
    expected = {("ClusterRole", ""): set(), ("Role", "ns1"): {("", "configmaps", "get")}}
    assert written == expected, f"expected only the read written, {expected}; saw {written}"
    said = (
        f"# denied, not granted: apps deployments patch in namespace ns1 for Probe "
        f"(task '{TASK}'); it would need a Role manager-role in namespace ns1: "
        "apiGroups [apps], resources [deployments], verbs [patch]"
    )
    assert said in seen.remarks(), f"expected the remark {said!r}, saw {seen.remarks()}"


def test_check_fails_on_a_denial_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[PATCH]),
        flags=("--write", "--check"),
    )
    assert seen.code == 1, f"expected exit 1 (a denial left unsettled), saw {seen.code}"


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param(io.StringIO("y\ny\n"), id="answers-from-a-pipe"),
        pytest.param(io.StringIO(""), id="no-input"),
    ],
)
def test_grant_denied_without_a_terminal_refuses_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answers: io.StringIO
) -> None:
    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[PATCH]),
        role=CLUSTER_ROLE,
        grant_denied=True,
        terminal=answers,
    )

    assert seen.code == 2, f"expected exit 2 (no terminal to ask on), saw {seen.code}"
    assert "--grant-denied" in seen.err and "not a terminal" in seen.err, (
        f"expected an error naming --grant-denied and the missing terminal, saw {seen.err!r}"
    )
    left = seen.role_file.read_text(encoding="utf-8")
    assert left == CLUSTER_ROLE, f"expected the role file untouched, saw:\n{left}"


def test_grant_denied_asks_per_rule_and_writes_only_what_was_confirmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], terminal: tuple[TextIO, int]
) -> None:
    reader, controller = terminal
    # Asked in order: core services create first, then apps deployments patch.
    os.write(controller, b"n\ny\n")

    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[PATCH, CREATE]),
        role=CLUSTER_ROLE,
        grant_denied=True,
        terminal=reader,
    )

    assert seen.code == 0, f"expected exit 0, saw {seen.code}: {seen.err}"
    questions = [line for line in seen.err.split("? [y/N] ") if "Grant it" in line]
    assert len(questions) == 2, f"expected one question per denied rule, saw {seen.err!r}"
    assert "core services create in namespace ns1" in questions[0], questions
    assert "apps deployments patch in namespace ns1" in questions[1], questions
    written = seen.written()
    expected = {
        ("ClusterRole", ""): set(),
        ("Role", "ns1"): {("", "configmaps", "get"), ("apps", "deployments", "patch")},
    }
    assert written == expected, f"expected the confirmed rule only, {expected}; saw {written}"
    remarks = seen.remarks()
    assert any(r.startswith("# denied, not granted: core services create") for r in remarks), (
        f"expected the refused denial still reported, saw {remarks}"
    )


def test_the_end_of_input_grants_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], terminal: tuple[TextIO, int]
) -> None:
    reader, controller = terminal
    os.write(controller, b"\x04")  # ^D on a terminal: end of input, no answer

    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[PATCH, CREATE]),
        role=CLUSTER_ROLE,
        grant_denied=True,
        terminal=reader,
    )

    granted = seen.written().get(("Role", "ns1"), set()) - {("", "configmaps", "get")}
    assert not granted, f"expected nothing granted without a yes, saw {granted}"


@pytest.mark.parametrize(
    ("task", "kind"),
    [
        pytest.param("x\n---\nkind: ClusterRole", "Probe", id="task-with-a-document"),
        pytest.param("x\r# ok", "Probe", id="task-with-a-carriage-return"),
        pytest.param(TASK, "Probe\nrules: []", id="kind-with-a-line"),
    ],
)
def test_a_record_string_stays_on_its_comment_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str, kind: str
) -> None:
    seen = support.run(
        tmp_path,
        capsys,
        snapshot=record(uses=[READ], denied=[{**PATCH, "task": task}], kind=kind),
    )

    # Printed: the documents written, then the remarks, each a comment line.
    body = seen.role_file.read_text(encoding="utf-8")
    assert seen.out.startswith(body), f"expected the documents first, saw {seen.out!r}"
    strays = [line for line in seen.out[len(body) :].split("\n")[:-1] if not line.startswith("# ")]
    assert not strays, f"expected every remark on '# ' lines, saw lines {strays}"
    assert "\r" not in seen.out, f"expected no carriage return printed, saw {seen.out!r}"


@pytest.mark.parametrize(
    ("allowed", "written"),
    [
        pytest.param(None, False, id="older-record-denied-use-is-not-granted"),
        pytest.param(False, False, id="never-let-through"),
        pytest.param(True, True, id="let-through-in-another-request"),
    ],
)
def test_a_use_the_record_lists_as_denied_is_granted_only_if_let_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allowed: bool | None, written: bool
) -> None:
    patch = use("apps", "deployments", "patch", "ns1")
    if allowed is not None:
        patch["allowed"] = allowed
    seen = support.run(
        tmp_path, capsys, snapshot=record(uses=[READ, patch], denied=[PATCH]), role=CLUSTER_ROLE
    )

    granted = ("apps", "deployments", "patch") in seen.written().get(("Role", "ns1"), set())
    assert granted is written, (
        f"expected deployments patch {'written' if written else 'not written'}, saw "
        f"{seen.written()}"
    )
