"""Whoever may create a CR must not steer Ansible: spec keys that name Ansible's own
variables never become extra vars unless the watch allows them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import hostile
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")
EVENT = GVK("", "v1", "Event")


def marking_scripts(directory: Path) -> tuple[Path, Path, Path]:
    """An interpreter and a shell that leave a marker, then do the real thing."""
    marker = directory / "marker"
    python = directory / "python-with-marker"
    python.write_text(f'#!/bin/sh\necho python >> "{marker}"\nexec "{sys.executable}" "$@"\n')
    shell = directory / "sh-with-marker"
    shell.write_text(f'#!/bin/sh\necho shell >> "{marker}"\nexec /bin/sh "$@"\n')
    for script in (python, shell):
        script.chmod(0o755)
    return marker, python, shell


def raw_value(kube: Client, namespace: str, name: str) -> Any:
    return kube.get(CONFIGMAP, name=f"{name}-raw", namespace=namespace)["data"]["value"]


def withheld_events(kube: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.list(EVENT, namespace=namespace)["items"]
    return [
        e
        for e in items
        if e["involvedObject"].get("name") == name and e["reason"] == "SpecFieldsWithheld"
    ]


def test_spec_cannot_choose_interpreter_shell_or_connection(
    kube: Client, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    marker, python, shell = marking_scripts(tmp_path)
    operator = start_operator(probe_watches())
    spec = {
        "message": "hello",
        "rawField": "ansiblePythonInterpreter",
        "ansiblePythonInterpreter": str(python),
        "ansibleShellExecutable": str(shell),
        "ansibleConnection": "ssh",  # would fail every task if it were used
    }
    kube.create(PROBE, probe("h", namespace, spec), namespace=namespace)

    wait_condition(
        kube, namespace=namespace, name="h", kind="Successful", status="True", operator=operator
    )
    assert not marker.exists(), f"CR-chosen programs ran: {marker.read_text()!r}"
    assert raw_value(kube, namespace, "h") == str(python), "raw spec lost the field"

    events = operator.eventually(
        lambda: withheld_events(kube, namespace, "h"), describe="a SpecFieldsWithheld event"
    )
    message = events[0]["message"]
    for field in ("ansiblePythonInterpreter", "ansibleShellExecutable", "ansibleConnection"):
        assert field in message, f"{field} not named in the event: {message!r}"
    assert events[0]["type"] == "Warning", events[0]

    # Logged once per generation: a resync of the same generation says nothing new.
    kube.patch(PROBE, name="h", namespace=namespace, body={"metadata": {"labels": {"x": "y"}}})
    kube.patch(PROBE, name="h", namespace=namespace, body={"spec": {"message": "again"}})
    operator.eventually(
        lambda: kube.get(CONFIGMAP, name="h-echo", namespace=namespace)["data"]["message"],
        until=lambda v: v == "again",
        describe="the second generation reconciled",
    )
    warnings = [
        line
        for line in operator.lines
        if line.get("msg") == "CR data withheld from Ansible variables"
    ]
    assert len(warnings) == 2, f"expected one warning per generation (2), saw {len(warnings)}"
    assert not marker.exists(), f"CR-chosen programs ran: {marker.read_text()!r}"


def test_watch_can_allow_ansible_variables_from_the_spec(
    kube: Client, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    marker, python, _ = marking_scripts(tmp_path)
    operator = start_operator(probe_watches("  allowAnsibleVarsFromSpec: true"))
    spec = {"message": "trusted", "ansiblePythonInterpreter": str(python)}
    kube.create(PROBE, probe("t", namespace, spec), namespace=namespace)

    wait_condition(
        kube, namespace=namespace, name="t", kind="Successful", status="True", operator=operator
    )
    assert marker.exists() and "python" in marker.read_text(), (
        "with allowAnsibleVarsFromSpec the spec's interpreter should run the modules; "
        f"marker exists: {marker.exists()}"
    )
    assert withheld_events(kube, namespace, "t") == [], "nothing was withheld, so no event"


def test_spec_keys_spelling_a_type_tag_run_no_template(
    kube: Client, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    """Each of these keys snake-cases to one of ansible-core's type tags; before they were
    checked on the final names, any of them made Ansible read the extra vars as YAML and
    run the command in ``message``. Each CR has the key at the top and one level down."""
    marker = tmp_path / "pwned"
    attack = "{{ lookup('pipe', 'echo pwned >> " + str(marker) + "') }}"
    operator = start_operator(probe_watches())
    names = {f"tag-{i}": spelling for i, spelling in enumerate(hostile.TAG_SPELLINGS[:5])}
    for name, spelling in names.items():
        spec = {"message": attack, spelling: "x", "cfg": {spelling: "x"}}
        kube.create(PROBE, probe(name, namespace, spec), namespace=namespace)
    kube.create(PROBE, probe("control", namespace, {"message": "plain"}), namespace=namespace)

    for name in [*names, "control"]:
        wait_condition(
            kube,
            namespace=namespace,
            name=name,
            kind="Successful",
            status="True",
            operator=operator,
        )
    assert not marker.exists(), f"a command from a CR ran: {marker.read_text()!r}"
    for name, spelling in names.items():
        echoed = kube.get(CONFIGMAP, name=f"{name}-echo", namespace=namespace)["data"]["message"]
        assert echoed == attack, f"{spelling}: expected the literal {attack!r}, saw {echoed!r}"
        events = operator.eventually(
            lambda name=name: withheld_events(kube, namespace, name),  # type: ignore[misc]
            describe=f"a SpecFieldsWithheld event for {spelling}",
        )
        for path in (f"spec.{spelling}", f"spec.cfg.{spelling}"):
            assert path in events[0]["message"], f"{path} not named: {events[0]['message']!r}"
    control = kube.get(CONFIGMAP, name="control-echo", namespace=namespace)["data"]["message"]
    assert control == "plain", f"the control CR's message: {control!r}"
